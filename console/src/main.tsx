/** The console: sign-in, then the pages the key's scopes allow, one at a time by the URL's hash. */
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { signOut, type KeyInUse } from "./api.ts";
import { Events } from "./events.tsx";
import { Keys } from "./keys.tsx";
import { LISTS, Records } from "./records.tsx";
import { SignIn } from "./sign-in.tsx";
import { Usage } from "./usage.tsx";
import { Webhooks } from "./webhooks.tsx";
import "./styles.css";

interface PageLink {
  path: string;
  label: string;
  scope: string;
}

const PAGES: PageLink[] = [
  ...LISTS.map((l) => ({ path: `records/${l.name}`, label: l.label, scope: "read" })),
  { path: "events", label: "Events", scope: "read" },
  { path: "usage", label: "Usage", scope: "read" },
  { path: "webhooks", label: "Webhooks", scope: "admin" },
  { path: "keys", label: "API keys", scope: "admin" },
];

const currentPath = () => decodeURIComponent(location.hash.replace(/^#\/?/, ""));

function Console({ who, onSignOut }: { who: KeyInUse; onSignOut: () => void }) {
  const [path, setPath] = useState(currentPath());
  useEffect(() => {
    const moved = () => setPath(currentPath());
    addEventListener("hashchange", moved);
    return () => removeEventListener("hashchange", moved);
  }, []);
  const allowed = PAGES.filter((p) => who.scopes.includes(p.scope));
  const page = allowed.find((p) => p.path === path) ?? allowed[0];
  const list = LISTS.find((l) => page?.path === `records/${l.name}`);
  return (
    <>
      <header>
        <a class="skip" href="#main">
          Skip to content
        </a>
        <strong>cribline</strong>
        <span>
          {who.tenant} · {who.name || who.id} · {who.timeZone}
        </span>
        <button type="button" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <nav aria-label="Pages">
        <ul>
          {allowed.map((p) => (
            <li key={p.path}>
              <a href={`#/${p.path}`} aria-current={p === page ? "page" : undefined}>
                {p.label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <main id="main" tabIndex={-1}>
        {page === undefined && <p>This key may only sync records: there is nothing here for it.</p>}
        {list && <Records key={list.name} who={who} list={list} />}
        {page?.path === "events" && <Events who={who} />}
        {page?.path === "usage" && <Usage who={who} />}
        {page?.path === "webhooks" && <Webhooks who={who} />}
        {page?.path === "keys" && <Keys who={who} />}
      </main>
    </>
  );
}

function App() {
  const [who, setWho] = useState<KeyInUse>();
  if (who === undefined) return <SignIn onSignedIn={setWho} />;
  return (
    <Console
      who={who}
      onSignOut={() => {
        signOut();
        setWho(undefined);
      }}
    />
  );
}

const root = document.getElementById("app");
if (root !== null) render(<App />, root);
