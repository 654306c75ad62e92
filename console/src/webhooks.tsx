/** Webhooks: endpoints made, changed, tested, disabled and enabled, their secrets rotated; each endpoint's attempts; replays. */
import { useState } from "preact/hooks";
import { api, query, type KeyInUse, type Page } from "./api.ts";
import { AttemptView, type Attempt } from "./attempt.tsx";
import { EVENT_TYPES } from "./events.tsx";
import { ErrorNote, Field, fromLocal, inZone, Pager, Table, usePaged } from "./parts.tsx";

interface Endpoint {
  id: string;
  url: string;
  description: string | null;
  events: string[];
  enabled: boolean;
  disabledReason: string | null;
  createdAt: string;
}

function EndpointForm({
  initial,
  onSave,
  label,
}: {
  initial?: Endpoint;
  onSave: (body: Record<string, unknown>) => Promise<void>;
  label: string;
}) {
  const [url, setUrl] = useState(initial?.url ?? "");
  const [description, setDescription] = useState(initial?.description ?? "");
  const [events, setEvents] = useState<string[]>(initial?.events ?? ["withdrawal.created"]);
  return (
    <form
      class="filters"
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault();
        void onSave({ url, events, description: description === "" ? null : description });
      }}
    >
      <Field label="URL">
        <input name="url" type="url" required value={url} onInput={(e) => setUrl((e.target as HTMLInputElement).value)} />
      </Field>
      <Field label="Description">
        <input name="description" value={description} onInput={(e) => setDescription((e.target as HTMLInputElement).value)} />
      </Field>
      <fieldset class="events">
        <legend>Events</legend>
        {EVENT_TYPES.map((t) => (
          <label key={t} class="check">
            <input
              type="checkbox"
              value={t}
              checked={events.includes(t)}
              onChange={(e) => setEvents((e.target as HTMLInputElement).checked ? [...events, t] : events.filter((x) => x !== t))}
            />
            {t}
          </label>
        ))}
      </fieldset>
      <button type="submit">{label}</button>
    </form>
  );
}

function EndpointView({ who, endpoint, onChanged }: { who: KeyInUse; endpoint: Endpoint; onChanged: () => void }) {
  const zone = who.timeZone;
  const base = `/v1/webhook-endpoints/${encodeURIComponent(endpoint.id)}`;
  const [error, setError] = useState<unknown>();
  const [note, setNote] = useState("");
  const [open, setOpen] = useState<Attempt>();
  const [version, setVersion] = useState(0);
  const [since, setSince] = useState("");
  const [until, setUntil] = useState("");
  const [filter, setFilter] = useState({ status: "", from: "", to: "" });
  const shown = { status: filter.status, attemptedSince: fromLocal(zone, filter.from), attemptedUntil: fromLocal(zone, filter.to) };
  const attempts = usePaged<Attempt>(`${endpoint.id} ${version} ${query(shown)}`, (cursor) =>
    api<Page<Attempt>>("GET", `${base}/attempts${query({ ...shown, cursor, limit: 20 })}`),
  );
  const act = (work: () => Promise<string>) => async () => {
    setError(undefined);
    setNote("");
    try {
      setNote(await work());
      setVersion(version + 1);
      onChanged();
    } catch (failure) {
      setError(failure);
    }
  };
  return (
    <section class="endpoint" aria-label={`Endpoint ${endpoint.url}`}>
      <h2>{endpoint.url}</h2>
      <p>
        {endpoint.enabled ? "Enabled" : `Disabled${endpoint.disabledReason ? `: ${endpoint.disabledReason}` : ""}`} ·{" "}
        {endpoint.events.join(", ")}
      </p>
      <div class="actions">
        <button
          type="button"
          onClick={act(async () => {
            const test = await api<{ status: string; responseCode: number | null; durationMs: number; error: string | null }>(
              "POST",
              `${base}/test`,
            );
            return `Test event ${test.status}: ${test.error ?? `answered ${test.responseCode}`} in ${test.durationMs} ms`;
          })}
        >
          Send test event
        </button>
        <button
          type="button"
          onClick={act(
            async () => (
              await api("POST", `${base}/${endpoint.enabled ? "disable" : "enable"}`),
              endpoint.enabled ? "Disabled" : "Enabled"
            ),
          )}
        >
          {endpoint.enabled ? "Disable" : "Enable"}
        </button>
        <button
          type="button"
          onClick={act(
            async () => `New secret, shown only now: ${(await api<{ secret: string }>("POST", `${base}/rotate-secret`)).secret}`,
          )}
        >
          Rotate secret
        </button>
      </div>
      <EndpointForm
        initial={endpoint}
        label="Save changes"
        onSave={(body) => act(async () => (await api("PATCH", base, body), "Saved"))()}
      />
      <p role="status">{note}</p>
      <ErrorNote error={error} />
      <form
        class="filters"
        aria-label="Replay a period"
        onSubmit={(e) => {
          e.preventDefault();
          void act(async () => {
            const done = await api<{ replayed: number }>("POST", `${base}/replay`, {
              since: fromLocal(zone, since),
              until: fromLocal(zone, until),
            });
            return `Replayed ${done.replayed} deliveries`;
          })();
        }}
      >
        <Field label={`Replay from (${zone})`}>
          <input type="datetime-local" required value={since} onInput={(e) => setSince((e.target as HTMLInputElement).value)} />
        </Field>
        <Field label={`Replay until (${zone})`}>
          <input type="datetime-local" required value={until} onInput={(e) => setUntil((e.target as HTMLInputElement).value)} />
        </Field>
        <button type="submit">Replay period</button>
      </form>
      <form class="filters" aria-label="Attempts shown" onSubmit={(e) => e.preventDefault()}>
        <Field label="Outcome">
          <select
            name="status"
            value={filter.status}
            onChange={(e) => setFilter({ ...filter, status: (e.target as HTMLSelectElement).value })}
          >
            <option value="">Any</option>
            <option value="succeeded">succeeded</option>
            <option value="failed">failed</option>
          </select>
        </Field>
        <Field label={`Attempted from (${zone})`}>
          <input
            type="datetime-local"
            value={filter.from}
            onChange={(e) => setFilter({ ...filter, from: (e.target as HTMLInputElement).value })}
          />
        </Field>
        <Field label={`Attempted until (${zone})`}>
          <input
            type="datetime-local"
            value={filter.to}
            onChange={(e) => setFilter({ ...filter, to: (e.target as HTMLInputElement).value })}
          />
        </Field>
      </form>
      <ErrorNote error={attempts.error} />
      <Table
        caption={`Attempts, page ${attempts.number}`}
        columns={[
          { label: "When", value: (a) => inZone(zone, a.attemptedAt) },
          { label: "Event", value: (a) => a.eventType },
          { label: "Status", value: (a) => `${a.status}${a.responseCode === null ? "" : ` (${a.responseCode})`}` },
          { label: "Error", value: (a) => a.error ?? "" },
          {
            label: "Replay",
            value: (a) => (
              <button
                type="button"
                onClick={act(
                  async () => (
                    await api("POST", `${base}/deliveries/${encodeURIComponent(a.deliveryId)}/replay`),
                    `Replaying ${a.webhookId}`
                  ),
                )}
              >
                Replay {a.webhookId}
              </button>
            ),
          },
        ]}
        rows={attempts.page?.data ?? []}
        busy={attempts.loading}
        onOpen={setOpen}
      />
      <Pager paged={attempts} label="Attempts" />
      {open && <AttemptView who={who} attempt={open} onClose={() => setOpen(undefined)} />}
    </section>
  );
}

export function Webhooks({ who }: { who: KeyInUse }) {
  const [version, setVersion] = useState(0);
  const [error, setError] = useState<unknown>();
  const [secret, setSecret] = useState("");
  // The endpoint shown whole, whichever page of the list holds it, read again after each change.
  const [current, setCurrent] = useState<Endpoint>();
  const endpoints = usePaged<Endpoint>(String(version), (cursor) =>
    api<Page<Endpoint>>("GET", `/v1/webhook-endpoints${query({ cursor, limit: 20 })}`),
  );
  return (
    <section aria-labelledby="webhooks-title">
      <h1 id="webhooks-title">Webhooks</h1>
      <EndpointForm
        label="Create endpoint"
        onSave={async (body) => {
          setError(undefined);
          try {
            const made = await api<Endpoint & { secret: string }>("POST", "/v1/webhook-endpoints", body);
            setSecret(made.secret);
            setCurrent(made);
            setVersion(version + 1);
          } catch (failure) {
            setError(failure);
          }
        }}
      />
      <ErrorNote error={error} />
      {secret && (
        <p class="secret" role="status">
          The endpoint's signing secret, shown only now: <output aria-label="Signing secret">{secret}</output>
        </p>
      )}
      <ErrorNote error={endpoints.error} />
      <Table
        caption={`Endpoints, page ${endpoints.number}`}
        columns={[
          { label: "URL", value: (e) => e.url },
          { label: "State", value: (e) => (e.enabled ? "enabled" : "disabled") },
          { label: "Events", value: (e) => e.events.length },
        ]}
        rows={endpoints.page?.data ?? []}
        busy={endpoints.loading}
        onOpen={setCurrent}
      />
      <Pager paged={endpoints} label="Endpoints" />
      {current && (
        <EndpointView
          key={current.id}
          who={who}
          endpoint={current}
          onChanged={() => {
            setVersion(version + 1);
            api<Endpoint>("GET", `/v1/webhook-endpoints/${encodeURIComponent(current.id)}`).then(setCurrent, setError);
          }}
        />
      )}
    </section>
  );
}
