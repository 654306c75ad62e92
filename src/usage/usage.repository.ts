/**
 * What usage reports read, written with the records they count: a narrow copy of each new
 * withdrawal, return and exchange (`usage_records`), and each group's totals per month of the
 * tenant's time zone (`usage_months`). Both are written in the sync batch's transaction, so a
 * report counts a batch whole or not at all.
 */
import type { Kysely, Transaction } from "kysely";
import type { Collection } from "../collections/define.js";
import type { StoredContent } from "../collections/record.js";
import { monthNumber, monthStart } from "../platform/zone.js";
import { engineOf } from "../storage/engine.js";
import { insertMany } from "../storage/query-template.js";
import { tenantZone } from "../tenants/tenant.repository.js";
import type { Schema } from "../storage/schema.js";

/** The collections a report counts, each by its kind number in `usage_records`. */
export const USAGE_KINDS = { withdrawals: 1, returns: 2, exchanges: 3 } as const;
export type UsageKind = keyof typeof USAGE_KINDS;

/** The fields a report groups by, as the API names them, and their `usage_records` columns. */
export const USAGE_FIELDS = {
  costCenterId: "cost_center_id",
  employeeId: "employee_id",
  productId: "product_id",
  sectorId: "sector_id",
  deviceId: "device_id",
} as const;
export type UsageField = keyof typeof USAGE_FIELDS;
/** The name a report gives a group's name beside its id: `employeeName` beside `employeeId`. */
export const nameFieldOf = (field: UsageField): string => `${field.slice(0, -2)}Name`;
/** The fields, in the order the API documents them. */
export const USAGE_FIELD_NAMES = Object.keys(USAGE_FIELDS) as UsageField[];

/** `usage_months`' counters: per kind, how many records and how many units. */
export const COUNTERS = ["withdrawals", "withdrawn", "returns", "returned", "exchanges", "exchanged"] as const;

const RECORD_COLUMNS = [
  "tenant_id",
  "event_at",
  "kind",
  "record_id",
  "cost_center_id",
  "employee_id",
  "product_id",
  "sector_id",
  "device_id",
  "quantity",
] as const;
const MONTH_COLUMNS = ["tenant_id", "field", "month", "group_id", ...COUNTERS] as const;

export function isUsageKind(name: string): name is UsageKind {
  return Object.hasOwn(USAGE_KINDS, name);
}

/** A copy's values in RECORD_COLUMNS order. */
interface Copy {
  eventAt: number;
  ids: Record<UsageField, string>;
  quantity: number;
}

/**
 * The month of each instant, as the reports count it: the last month start in `zone` at or
 * before it. An instant's month in any zone is its UTC month or one next to it, so only those
 * months' starts are found.
 */
function monthsOf(zone: string, instants: number[]): number[] {
  const starts = new Map<number, number>();
  for (const utc of new Set(instants.map(monthNumber))) {
    for (const month of [utc - 1, utc, utc + 1]) if (!starts.has(month)) starts.set(month, monthStart(zone, month));
  }
  const ordered = [...starts].sort(([a], [b]) => a - b);
  return instants.map((t) => {
    let low = 0;
    let high = ordered.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if ((ordered[mid]?.[1] ?? 0) <= t) low = mid;
      else high = mid - 1;
    }
    return ordered[low]?.[0] ?? 0;
  });
}

/** Adds each cell's counts to its stored totals, making the cells a tenant has not had yet. */
async function addToMonths(trx: Transaction<Schema>, cells: unknown[][]): Promise<void> {
  await insertMany(trx, "usage_months", MONTH_COLUMNS, cells, { keys: ["tenant_id", "field", "month", "group_id"], add: COUNTERS });
}

/** Month cells of `copies` of one kind: one per field, month and group, the copies counted. */
function monthCells(tenantId: number, kind: UsageKind, copies: Copy[], months: number[]): unknown[][] {
  const at = (USAGE_KINDS[kind] - 1) * 2;
  const cells = new Map<string, unknown[]>();
  copies.forEach((copy, i) => {
    for (const field of USAGE_FIELD_NAMES) {
      const key = `${field} ${months[i]} ${copy.ids[field]}`;
      let cell = cells.get(key);
      if (cell === undefined) cells.set(key, (cell = [tenantId, field, months[i], copy.ids[field], 0, 0, 0, 0, 0, 0]));
      (cell[4 + at] as number) += 1;
      (cell[5 + at] as number) += copy.quantity;
    }
  });
  return [...cells.values()];
}

function copyOf(content: StoredContent): Copy {
  const body = JSON.parse(content.body) as { deviceId: string; quantity: number };
  return {
    eventAt: content.event_at ?? 0,
    ids: {
      costCenterId: content.cost_center_id ?? "",
      employeeId: content.employee_id ?? "",
      productId: content.product_id ?? "",
      sectorId: content.sector_id ?? "",
      deviceId: body.deviceId,
    },
    quantity: body.quantity,
  };
}

/** Counts the records a batch created, when their collection is one that reports count. */
export async function recordUsage(
  trx: Transaction<Schema>,
  collection: Collection,
  tenantId: number,
  created: StoredContent[],
): Promise<void> {
  if (!isUsageKind(collection.name) || created.length === 0) return;
  const kind = USAGE_KINDS[collection.name];
  const copies = created.map(copyOf);
  await insertMany(
    trx,
    "usage_records",
    RECORD_COLUMNS,
    copies.map((c, i) => [
      tenantId,
      c.eventAt,
      kind,
      created[i]?.id,
      c.ids.costCenterId,
      c.ids.employeeId,
      c.ids.productId,
      c.ids.sectorId,
      c.ids.deviceId,
      c.quantity,
    ]),
  );
  const months = monthsOf(
    await tenantZone(trx, tenantId),
    copies.map((c) => c.eventAt),
  );
  await addToMonths(trx, monthCells(tenantId, collection.name, copies, months));
}

/**
 * Sets the tenant's time zone and counts its months again in it, while its syncs of the
 * counted lists wait their turn.
 */
export async function setTenantZone(db: Kysely<Schema>, tenantId: number, zone: string): Promise<void> {
  await db.transaction().execute(async (trx) => {
    for (const kind of Object.keys(USAGE_KINDS)) await engineOf(trx).serializeWriters(trx, kind, tenantId);
    await trx.updateTable("tenants").set({ time_zone: zone }).where("id", "=", tenantId).execute();
    await trx.deleteFrom("usage_months").where("tenant_id", "=", tenantId).execute();
    for (const [kind, number] of Object.entries(USAGE_KINDS)) {
      let after: [number, string] = [Number.MIN_SAFE_INTEGER, ""];
      for (;;) {
        const rows = await trx
          .selectFrom("usage_records")
          .selectAll()
          .where("tenant_id", "=", tenantId)
          .where("kind", "=", number)
          .where((eb) => eb(eb.refTuple("event_at", "record_id"), ">", eb.tuple(after[0], after[1])))
          .orderBy("event_at")
          .orderBy("record_id")
          .limit(5000)
          .execute();
        const last = rows[rows.length - 1];
        if (last === undefined) break;
        after = [Number(last.event_at), last.record_id];
        const copies = rows.map(
          (r): Copy => ({
            eventAt: Number(r.event_at),
            quantity: r.quantity,
            ids: {
              costCenterId: r.cost_center_id,
              employeeId: r.employee_id,
              productId: r.product_id,
              sectorId: r.sector_id,
              deviceId: r.device_id,
            },
          }),
        );
        const months = monthsOf(
          zone,
          copies.map((c) => c.eventAt),
        );
        await addToMonths(trx, monthCells(tenantId, kind as UsageKind, copies, months));
      }
    }
  });
}
