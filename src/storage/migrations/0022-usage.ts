/**
 * Usage reports (src/usage/): each tenant's time zone, a narrow copy of every withdrawal,
 * return and exchange (what a report counts, in event-date order), and per month of the
 * tenant's zone the totals of each cost center, employee, product, sector and device. Both are
 * filled here from the records already stored; every tenant starts in UTC.
 */
import { sql, type Kysely, type RawBuilder } from "kysely";
import type { Engine } from "../engine.js";

const KINDS = [
  ["withdrawals", 1],
  ["returns", 2],
  ["exchanges", 3],
] as const;
const FIELDS = ["costCenterId", "employeeId", "productId", "sectorId", "deviceId"] as const;
const COUNTERS = ["withdrawals", "withdrawn", "returns", "returned", "exchanges", "exchanged"] as const;
const CHUNK = 500;

interface Stored {
  id: string;
  event_at: number | string;
  body: string;
}

/** A tenant's withdrawals, returns and exchanges copied, and their months counted in UTC. */
async function copyTenant(db: Kysely<unknown>, tenantId: number): Promise<void> {
  const totals = new Map<string, [string, number, string, number[]]>();
  for (const [name, kind] of KINDS) {
    let after = "";
    for (;;) {
      const { rows } = await sql<Stored>`select id, event_at, body from ${sql.table(name)}
        where tenant_id = ${tenantId} and id > ${after} order by id limit ${sql.lit(CHUNK)}`.execute(db);
      const last = rows[rows.length - 1];
      if (last === undefined) break;
      after = last.id;
      const copies = rows.map((row) => {
        const body = JSON.parse(row.body) as Record<string, string | number>;
        const eventAt = Number(row.event_at);
        const date = new Date(eventAt);
        const month = date.getUTCFullYear() * 12 + date.getUTCMonth();
        for (const field of FIELDS) {
          const key = `${field} ${month} ${body[field]}`;
          let cell = totals.get(key);
          if (cell === undefined) totals.set(key, (cell = [field, month, String(body[field]), [0, 0, 0, 0, 0, 0]]));
          const counts = cell[3];
          counts[(kind - 1) * 2] = (counts[(kind - 1) * 2] ?? 0) + 1;
          counts[(kind - 1) * 2 + 1] = (counts[(kind - 1) * 2 + 1] ?? 0) + Number(body.quantity);
        }
        return {
          tenant_id: tenantId,
          event_at: eventAt,
          kind,
          record_id: row.id,
          cost_center_id: body.costCenterId,
          employee_id: body.employeeId,
          product_id: body.productId,
          sector_id: body.sectorId,
          device_id: body.deviceId,
          quantity: body.quantity,
        };
      });
      await db
        .insertInto("usage_records" as never)
        .values(copies as never)
        .execute();
    }
  }
  const cells = [...totals.values()].map(([field, month, group_id, counts]) => ({
    tenant_id: tenantId,
    field,
    month,
    group_id,
    ...Object.fromEntries(COUNTERS.map((c, i) => [c, counts[i]])),
  }));
  for (let at = 0; at < cells.length; at += CHUNK) {
    await db
      .insertInto("usage_months" as never)
      .values(cells.slice(at, at + CHUNK) as never)
      .execute();
  }
}

export function usageMigration(t: Engine) {
  const clustered = <B extends { modifyEnd(modifier: RawBuilder<unknown>): B }>(table: B): B =>
    t.clusteredTables ? table.modifyEnd(sql`without rowid`) : table;
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      await db.schema
        .alterTable("tenants")
        .addColumn("time_zone", "text", (c) => c.notNull().defaultTo("UTC"))
        .execute();
      let table = db.schema
        .createTable("usage_records")
        .addColumn("tenant_id", "integer", (c) => c.notNull())
        .addColumn("event_at", t.millisType, (c) => c.notNull())
        .addColumn("kind", "integer", (c) => c.notNull())
        .addColumn("record_id", t.sortKeyType, (c) => c.notNull());
      for (const field of ["cost_center_id", "employee_id", "product_id", "sector_id", "device_id"]) {
        table = table.addColumn(field, t.sortKeyType, (c) => c.notNull());
      }
      await clustered(
        table
          .addColumn("quantity", "integer", (c) => c.notNull())
          .addPrimaryKeyConstraint("usage_records_pkey", ["tenant_id", "event_at", "kind", "record_id"]),
      ).execute();
      let months = db.schema
        .createTable("usage_months")
        .addColumn("tenant_id", "integer", (c) => c.notNull())
        .addColumn("field", "text", (c) => c.notNull())
        .addColumn("month", "integer", (c) => c.notNull())
        .addColumn("group_id", t.sortKeyType, (c) => c.notNull());
      for (const counter of COUNTERS) months = months.addColumn(counter, "bigint", (c) => c.notNull());
      await clustered(months.addPrimaryKeyConstraint("usage_months_pkey", ["tenant_id", "field", "month", "group_id"])).execute();

      const { rows: tenants } = await sql<{ id: number }>`select id from tenants order by id`.execute(db);
      for (const { id } of tenants) await copyTenant(db, id);
    },
  };
}
