/** Events: every change of the tenant's records, newest first, by type. */
import { useState } from "preact/hooks";
import { api, query, type KeyInUse, type Page } from "./api.ts";
import { Details, ErrorNote, Field, inZone, Pager, Table } from "./parts.tsx";
import { usePaged } from "./parts.tsx";

interface Event {
  id: string;
  type: string;
  createdAt: string;
  data: Record<string, unknown> & { id: string };
}

const TRANSACTIONS = ["withdrawal", "return", "exchange", "training-record"];
const MASTERS = ["employee", "cost-center", "sector", "product", "device"];
export const EVENT_TYPES = [...TRANSACTIONS, ...MASTERS].flatMap((r) =>
  MASTERS.includes(r) ? [`${r}.created`, `${r}.updated`] : [`${r}.created`],
);

export function Events({ who }: { who: KeyInUse }) {
  const [type, setType] = useState("");
  const [open, setOpen] = useState<Event>();
  const paged = usePaged<Event>(type, (cursor) => api<Page<Event>>("GET", `/v1/events${query({ type, cursor, limit: 20 })}`));
  return (
    <section aria-labelledby="events-title">
      <h1 id="events-title">Events</h1>
      <div class="filters">
        <Field label="Type">
          <select name="type" value={type} onChange={(e) => setType((e.target as HTMLSelectElement).value)}>
            <option value="">Every type</option>
            {EVENT_TYPES.map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </Field>
      </div>
      <ErrorNote error={paged.error} />
      <Table
        caption={`Events, page ${paged.number}`}
        columns={[
          { label: "Recorded", value: (e) => inZone(who.timeZone, e.createdAt) },
          { label: "Type", value: (e) => e.type },
          { label: "Record", value: (e) => e.data.id },
          { label: "Event id", value: (e) => e.id },
        ]}
        rows={paged.page?.data ?? []}
        busy={paged.loading}
        onOpen={setOpen}
      />
      <Pager paged={paged} label="Events" />
      {open && <Details title={`${open.type} ${open.data.id}`} value={open.data} onClose={() => setOpen(undefined)} />}
    </section>
  );
}
