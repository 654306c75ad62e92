/** Keys: the tenant's API keys with their last use; a new one's secret shown once; revoking after a confirmation. */
import { useState } from "preact/hooks";
import { api, query, type KeyInUse, type Page } from "./api.ts";
import { ErrorNote, Field, fromLocal, inZone, Pager, Table, usePaged } from "./parts.tsx";

interface ApiKey {
  id: string;
  name: string;
  scopes: string[];
  createdAt: string;
  expiresAt: string | null;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

const SCOPES = ["read", "sync", "admin"];

export function Keys({ who }: { who: KeyInUse }) {
  const zone = who.timeZone;
  const [version, setVersion] = useState(0);
  const [error, setError] = useState<unknown>();
  const [made, setMade] = useState<ApiKey & { key: string }>();
  const [copied, setCopied] = useState(false);
  const [name, setName] = useState("");
  const [scopes, setScopes] = useState<string[]>(["read"]);
  const [expires, setExpires] = useState("");
  const paged = usePaged<ApiKey>(String(version), (cursor) => api<Page<ApiKey>>("GET", `/v1/api-keys${query({ cursor, limit: 20 })}`));

  async function create(e: Event) {
    e.preventDefault();
    setError(undefined);
    try {
      const body = { name, scopes, ...(expires === "" ? {} : { expiresAt: fromLocal(zone, expires) }) };
      setMade(await api<ApiKey & { key: string }>("POST", "/v1/api-keys", body));
      setCopied(false);
      setVersion(version + 1);
    } catch (failure) {
      setError(failure);
    }
  }

  async function revoke(key: ApiKey) {
    if (!window.confirm(`Revoke the key "${key.name}" (${key.id})? Requests with it are refused from now on.`)) return;
    setError(undefined);
    try {
      await api("POST", `/v1/api-keys/${encodeURIComponent(key.id)}/revoke`);
      setVersion(version + 1);
    } catch (failure) {
      setError(failure);
    }
  }

  return (
    <section aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      <form class="filters" onSubmit={create} aria-label="New key">
        <Field label="Name">
          <input name="name" required maxLength={100} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
        </Field>
        <fieldset>
          <legend>Scopes</legend>
          {SCOPES.map((scope) => (
            <label key={scope} class="check">
              <input
                type="checkbox"
                name="scopes"
                value={scope}
                checked={scopes.includes(scope)}
                onChange={(e) => setScopes((e.target as HTMLInputElement).checked ? [...scopes, scope] : scopes.filter((s) => s !== scope))}
              />
              {scope}
            </label>
          ))}
        </fieldset>
        <Field label={`Expires (${zone}), optional`}>
          <input name="expires" type="datetime-local" value={expires} onInput={(e) => setExpires((e.target as HTMLInputElement).value)} />
        </Field>
        <button type="submit">Create key</button>
      </form>
      <ErrorNote error={error} />
      {made && (
        <div class="secret" role="status">
          <p>
            The key <strong>{made.name}</strong>, shown only now: keep it safe.
          </p>
          <output aria-label="New key">{made.key}</output>
          <button
            type="button"
            onClick={() => {
              void navigator.clipboard.writeText(made.key).then(() => setCopied(true));
            }}
          >
            {copied ? "Copied" : "Copy"}
          </button>
          <button type="button" onClick={() => setMade(undefined)}>
            Done
          </button>
        </div>
      )}
      <ErrorNote error={paged.error} />
      <Table
        caption={`Keys, page ${paged.number}`}
        columns={[
          { label: "Name", value: (k) => k.name },
          { label: "Id", value: (k) => k.id },
          { label: "Scopes", value: (k) => k.scopes.join(", ") },
          { label: "Last used", value: (k) => inZone(zone, k.lastUsedAt) || "never" },
          { label: "Expires", value: (k) => inZone(zone, k.expiresAt) || "never" },
          {
            label: "State",
            value: (k) =>
              k.revokedAt !== null ? (
                `revoked ${inZone(zone, k.revokedAt)}`
              ) : k.id === who.id ? (
                "this key"
              ) : (
                <button type="button" onClick={() => void revoke(k)}>
                  Revoke {k.name}
                </button>
              ),
          },
        ]}
        rows={paged.page?.data ?? []}
        busy={paged.loading}
      />
      <Pager paged={paged} label="Keys" />
    </section>
  );
}
