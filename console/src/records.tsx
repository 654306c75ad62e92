/** Records: every list with its filters, the time window in the tenant's zone, paging both ways, a record's details. */
import { useState } from "preact/hooks";
import { api, query, type KeyInUse, type Page } from "./api.ts";
import { Details, ErrorNote, Field, fromLocal, inZone, Pager, Table, usePaged, type Column } from "./parts.tsx";

type Row = Record<string, unknown> & { id: string };

interface ListInfo {
  name: string;
  label: string;
  /** The event date a window matches; none on master data. */
  event?: string;
  relations: string[];
  /** The column after the name: what identifies a record besides it. */
  extra: string;
  code?: boolean;
}

const TRANSACTION = ["employeeId", "productId", "costCenterId", "sectorId"];
export const LISTS: ListInfo[] = [
  { name: "withdrawals", label: "Withdrawals", event: "deliveredAt", relations: TRANSACTION, extra: "productName" },
  { name: "returns", label: "Returns", event: "deliveredAt", relations: TRANSACTION, extra: "productName" },
  { name: "exchanges", label: "Exchanges", event: "deliveredAt", relations: TRANSACTION, extra: "productName" },
  { name: "training-records", label: "Training records", event: "completedAt", relations: TRANSACTION, extra: "trainingName" },
  { name: "employees", label: "Employees", relations: ["sectorId", "costCenterId"], extra: "registration" },
  { name: "cost-centers", label: "Cost centers", relations: [], extra: "code", code: true },
  { name: "sectors", label: "Sectors", relations: [], extra: "id" },
  { name: "products", label: "Products", relations: [], extra: "sku" },
  { name: "devices", label: "Devices", relations: [], extra: "location" },
];

function columnsOf(list: ListInfo, zone: string): Column<Row>[] {
  const text = (field: string) => (row: Row) => (row[field] === null || row[field] === undefined ? "" : String(row[field]));
  const time = (field: string) => (row: Row) => inZone(zone, row[field] as string);
  if (list.event !== undefined) {
    return [
      { label: "Id", value: text("id") },
      { label: "Event date", value: time(list.event) },
      { label: "Employee", value: text("employeeName") },
      { label: list.extra === "trainingName" ? "Training" : "Product", value: text(list.extra) },
      ...(list.extra === "productName" ? [{ label: "Quantity", value: text("quantity") }] : []),
      { label: "Stored", value: time("createdAt") },
    ];
  }
  return [
    { label: "Id", value: text("id") },
    { label: "Name", value: text("name") },
    ...(list.extra === "id" ? [] : [{ label: list.extra[0]?.toUpperCase() + list.extra.slice(1), value: text(list.extra) }]),
    { label: "Updated", value: time("updatedAt") },
  ];
}

export function Records({ who, list }: { who: KeyInUse; list: ListInfo }) {
  const zone = who.timeZone;
  const [form, setForm] = useState<Record<string, string>>({});
  const [applied, setApplied] = useState<Record<string, string>>({});
  const [open, setOpen] = useState<Row>();
  const params = {
    ...applied,
    createdSince: fromLocal(zone, applied.createdSince ?? ""),
    createdUntil: fromLocal(zone, applied.createdUntil ?? ""),
  };
  const key = `${list.name}${query(params)}`;
  const paged = usePaged<Row>(key, (cursor) => api<Page<Row>>("GET", `/v1/${list.name}${query({ ...params, cursor, limit: 20 })}`));
  const onInput = (name: string) => (e: Event) => setForm({ ...form, [name]: (e.target as HTMLInputElement).value });
  const input = (name: string) => <input name={name} value={form[name] ?? ""} onInput={onInput(name)} />;
  const when = (name: string) => <input name={name} type="datetime-local" step={1} value={form[name] ?? ""} onInput={onInput(name)} />;
  return (
    <section aria-labelledby="records-title">
      <h1 id="records-title">{list.label}</h1>
      <form
        class="filters"
        onSubmit={(e) => {
          e.preventDefault();
          setApplied({ ...form });
          setOpen(undefined);
        }}
      >
        <Field label="Name starts with">{input("name")}</Field>
        {list.code && <Field label="Code starts with">{input("code")}</Field>}
        {list.event !== undefined && (
          <>
            <Field label={`Event from (${zone})`}>{when("createdSince")}</Field>
            <Field label={`Event until (${zone})`}>{when("createdUntil")}</Field>
          </>
        )}
        {list.relations.map((relation) => (
          <Field key={relation} label={relation}>
            {input(relation)}
          </Field>
        ))}
        <button type="submit">Apply</button>
      </form>
      <ErrorNote error={paged.error} />
      <Table
        caption={`${list.label}, page ${paged.number}`}
        columns={columnsOf(list, zone)}
        rows={paged.page?.data ?? []}
        busy={paged.loading}
        onOpen={setOpen}
      />
      <Pager paged={paged} label={list.label} />
      {open && <Details title={`${list.label}: ${open.id}`} value={open} onClose={() => setOpen(undefined)} />}
    </section>
  );
}
