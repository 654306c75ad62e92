/** Usage: a report as a chart and a table, in the tenant's zone or another, with a CSV download of every row. */
import { useState } from "preact/hooks";
import { csvCell, nameFieldOf, usageFields, valueAt } from "../../client/src/csv.ts";
import { zoneNamed } from "../../src/platform/zone.ts";
import { api, query, type KeyInUse, type Page } from "./api.ts";
import { ErrorNote, Field, fromLocal, Pager, Table, usePaged } from "./parts.tsx";

interface Counted {
  count: number;
  quantity: number;
}
type UsageRow = Record<string, string | null | number | Counted> & {
  period: string;
  withdrawals: Counted;
  returns: Counted;
  exchanges: Counted;
  netQuantity: number;
};

const FIELDS = ["costCenterId", "employeeId", "productId", "sectorId", "deviceId"];
const FIELD_LABELS: Record<string, string> = {
  costCenterId: "Cost center",
  employeeId: "Employee",
  productId: "Product",
  sectorId: "Sector",
  deviceId: "Device",
};
/** The calendar day after `date` (`YYYY-MM-DD`). */
const nextDay = (date: string) => new Date(Date.parse(`${date}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
/** How many groups the ranking shows. */
const TOP = 20;

/** A group's label: its name, or its id when it has none. */
const groupLabel = (row: UsageRow, fields: string[]) =>
  fields.map((f) => (row[nameFieldOf(f)] as string | null) ?? (row[f] as string)).join(" / ");

/** Bars of units withdrawn, each labelled by its period (unless `byGroup`: a group's whole report) and group. */
function Chart({ caption, rows, fields, byGroup = false }: { caption: string; rows: UsageRow[]; fields: string[]; byGroup?: boolean }) {
  const max = Math.max(1, ...rows.map((r) => r.withdrawals.quantity));
  return (
    <figure class="chart" aria-label={caption}>
      <figcaption>{caption}</figcaption>
      <ul>
        {rows.map((row, i) => {
          const label = byGroup ? groupLabel(row, fields) : `${row.period.slice(0, 10)} ${groupLabel(row, fields)}`;
          return (
            <li key={i} data-quantity={row.withdrawals.quantity}>
              <span class="bar-label">{label}</span>
              <span
                class="bar"
                style={{ width: `${(100 * row.withdrawals.quantity) / max}%` }}
                role="img"
                aria-label={`${label}: ${row.withdrawals.quantity} withdrawn`}
              />
              <span class="bar-value">{row.withdrawals.quantity}</span>
            </li>
          );
        })}
      </ul>
    </figure>
  );
}

export function Usage({ who }: { who: KeyInUse }) {
  const [form, setForm] = useState({ groupBy: "costCenterId", second: "", interval: "month", from: "", until: "", timeZone: "" });
  const [top, setTop] = useState<UsageRow[]>();
  const [ranking, setRanking] = useState(false);
  const [applied, setApplied] = useState<typeof form>();
  const [error, setError] = useState<unknown>();
  const zone = applied?.timeZone || who.timeZone;
  const fields = applied === undefined ? [] : [applied.groupBy, ...(applied.second === "" ? [] : [applied.second])];
  const params =
    applied === undefined
      ? undefined
      : {
          groupBy: fields.join(","),
          interval: applied.interval,
          createdSince: fromLocal(zone, `${applied.from}T00:00`),
          // The instant before the next local day begins: a day of the zone may have 23 or 25 hours.
          createdUntil: new Date(Date.parse(fromLocal(zone, `${nextDay(applied.until)}T00:00`)) - 1).toISOString(),
          timeZone: applied.timeZone,
        };
  const paged = usePaged<UsageRow>(JSON.stringify(params), (cursor) =>
    params === undefined
      ? Promise.resolve({ data: [], cursor: null })
      : api<Page<UsageRow>>("GET", `/v1/usage${query({ ...params, cursor, limit: 50 })}`),
  );

  /** Every row of the report, page after page. */
  async function everyRow(): Promise<UsageRow[]> {
    const rows: UsageRow[] = [];
    let cursor: string | null = null;
    do {
      const page: Page<UsageRow> = await api<Page<UsageRow>>("GET", `/v1/usage${query({ ...params, cursor, limit: 100 })}`);
      rows.push(...page.data);
      cursor = page.cursor;
    } while (cursor !== null);
    return rows;
  }

  /** The groups with the most units withdrawn over the whole report, each group's periods added up. */
  async function rank() {
    setError(undefined);
    setRanking(true);
    try {
      const groups = new Map<string, UsageRow>();
      for (const row of await everyRow()) {
        const key = fields.map((f) => row[f]).join(" ");
        const sum = groups.get(key);
        if (sum === undefined) groups.set(key, { ...row, withdrawals: { ...row.withdrawals } });
        else sum.withdrawals.quantity += row.withdrawals.quantity;
      }
      setTop([...groups.values()].sort((a, b) => b.withdrawals.quantity - a.withdrawals.quantity).slice(0, TOP));
    } catch (failure) {
      setError(failure);
    } finally {
      setRanking(false);
    }
  }

  async function download() {
    if (params === undefined) return;
    setError(undefined);
    try {
      const columns = usageFields(fields.join(","));
      const lines = [columns.map(csvCell).join(",")];
      for (const row of await everyRow()) lines.push(columns.map((column) => csvCell(valueAt(row, column))).join(","));
      const link = document.createElement("a");
      link.href = URL.createObjectURL(new Blob([`${lines.join("\r\n")}\r\n`], { type: "text/csv" }));
      link.download = `usage-${fields.join("-")}-${params.interval}.csv`;
      link.click();
      URL.revokeObjectURL(link.href);
    } catch (failure) {
      setError(failure);
    }
  }

  const set = (name: keyof typeof form) => (e: Event) => setForm({ ...form, [name]: (e.target as HTMLInputElement).value });
  return (
    <section aria-labelledby="usage-title">
      <h1 id="usage-title">Usage</h1>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setTop(undefined);
          if (form.timeZone !== "" && zoneNamed(form.timeZone) === undefined) {
            setError(new Error(`"${form.timeZone}" is not an IANA time zone, such as Europe/Berlin`));
            return;
          }
          setError(undefined);
          setApplied({ ...form });
        }}
      >
        <Field label="Group by">
          <select name="groupBy" value={form.groupBy} onChange={set("groupBy")}>
            {FIELDS.map((f) => (
              <option key={f} value={f}>
                {FIELD_LABELS[f]}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Then by (optional)">
          <select name="second" value={form.second} onChange={set("second")}>
            <option value="">Nothing</option>
            {FIELDS.filter((f) => f !== form.groupBy).map((f) => (
              <option key={f} value={f}>
                {FIELD_LABELS[f]}
              </option>
            ))}
          </select>
        </Field>
        <Field label="Per">
          <select name="interval" value={form.interval} onChange={set("interval")}>
            <option value="day">day</option>
            <option value="week">week</option>
            <option value="month">month</option>
            <option value="total">whole period</option>
          </select>
        </Field>
        <Field label="From (first day)">
          <input name="from" type="date" required value={form.from} onInput={set("from")} />
        </Field>
        <Field label="Until (last day)">
          <input name="until" type="date" required value={form.until} onInput={set("until")} />
        </Field>
        <Field label="Time zone" hint={`empty: the tenant's, ${who.timeZone}`}>
          <input name="timeZone" value={form.timeZone} onInput={set("timeZone")} />
        </Field>
        <button type="submit">Show</button>
        <button type="button" onClick={() => void download()} disabled={params === undefined}>
          Download CSV
        </button>
        <button type="button" onClick={() => void rank()} disabled={params === undefined || ranking}>
          Top {TOP} by units withdrawn
        </button>
      </form>
      <ErrorNote error={error} />
      <ErrorNote error={paged.error} />
      {top !== undefined && <Chart caption={`Top ${TOP} by units withdrawn, over every page`} rows={top} fields={fields} byGroup />}
      {params !== undefined && (
        <>
          <Chart caption="Units withdrawn, this page's rows" rows={paged.page?.data ?? []} fields={fields} />
          <Table
            caption={`Usage per ${params.interval}, page ${paged.number}`}
            columns={[
              { label: "Period", value: (r) => r.period },
              ...fields.map((f) => ({ label: FIELD_LABELS[f] ?? f, value: (r: UsageRow) => groupLabel(r, [f]) })),
              { label: "Withdrawals", value: (r) => `${r.withdrawals.count} (${r.withdrawals.quantity} units)` },
              { label: "Returns", value: (r) => `${r.returns.count} (${r.returns.quantity} units)` },
              { label: "Exchanges", value: (r) => `${r.exchanges.count} (${r.exchanges.quantity} units)` },
              { label: "Net units", value: (r) => r.netQuantity },
            ]}
            rows={paged.page?.data ?? []}
            busy={paged.loading}
          />
          <Pager paged={paged} label="Usage" />
        </>
      )}
    </section>
  );
}
