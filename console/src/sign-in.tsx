/** Sign-in with an API key of the tenant: checked with the API, then kept in memory for this tab only. */
import { useState } from "preact/hooks";
import { signIn, type KeyInUse } from "./api.ts";
import { ErrorNote, Field } from "./parts.tsx";

export function SignIn({ onSignedIn }: { onSignedIn: (who: KeyInUse) => void }) {
  const [key, setKey] = useState("");
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  return (
    <main class="sign-in">
      <h1>cribline console</h1>
      <form
        method="post"
        onSubmit={(e) => {
          e.preventDefault();
          setBusy(true);
          setError(undefined);
          signIn(key.trim())
            .then((who) => {
              setKey("");
              onSignedIn(who);
            })
            .catch(setError)
            .finally(() => setBusy(false));
        }}
      >
        <Field label="API key" hint="Kept in this tab's memory only: closing or reloading the tab signs you out.">
          <input
            name="key"
            type="password"
            autoComplete="new-password"
            spellcheck={false}
            required
            value={key}
            onInput={(e) => setKey((e.target as HTMLInputElement).value)}
          />
        </Field>
        <button type="submit" disabled={busy}>
          Sign in
        </button>
      </form>
      <ErrorNote error={error} />
    </main>
  );
}
