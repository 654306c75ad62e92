/**
 * The names a usage report shows beside its groups' ids: an employee's or product's is the
 * one its most recently stored transaction carries (`employeeName`, `productName`); a cost
 * center's, sector's or device's is its master record's. Null when there is none.
 */
import { sql, type Kysely } from "kysely";
import type { Schema } from "../storage/schema.js";
import { USAGE_FIELDS, USAGE_KINDS, type UsageField } from "./usage.repository.js";

const MASTER_TABLES: Partial<Record<UsageField, "cost_centers" | "sectors" | "devices">> = {
  costCenterId: "cost_centers",
  sectorId: "sectors",
  deviceId: "devices",
};
const CARRIED: Partial<Record<UsageField, string>> = { employeeId: "employeeName", productId: "productName" };

const nameIn = (body: unknown, field: string): string | null => {
  const value = typeof body === "string" ? (JSON.parse(body) as Record<string, unknown>)[field] : undefined;
  return typeof value === "string" ? value : null;
};

/** The name of each id of `field`, for ids of one page. */
export async function groupNames(
  db: Kysely<Schema>,
  tenantId: number,
  field: UsageField,
  ids: string[],
): Promise<Map<string, string | null>> {
  const names = new Map<string, string | null>(ids.map((id) => [id, null]));
  if (ids.length === 0) return names;
  const master = MASTER_TABLES[field];
  if (master !== undefined) {
    const rows = await db.selectFrom(master).select(["id", "body"]).where("tenant_id", "=", tenantId).where("id", "in", ids).execute();
    for (const row of rows) names.set(row.id, nameIn(row.body, "name"));
    return names;
  }
  const column = sql.ref(`t.${USAGE_FIELDS[field]}`);
  const latest = Object.keys(USAGE_KINDS).flatMap((table, i) =>
    ["created_at", "body"].map(
      (selected) => sql`(select ${sql.ref(`t.${selected}`)} from ${sql.table(table)} as t
        where t.tenant_id = ${tenantId} and ${column} = v.id order by t.created_at desc, t.id desc limit 1) as ${sql.id(`${selected}${i}`)}`,
    ),
  );
  const values = sql.join(ids.map((id) => sql`(${id})`));
  const { rows } = await sql<Record<string, unknown>>`with v(id) as (values ${values}) select v.id, ${sql.join(latest)} from v`.execute(db);
  for (const row of rows) {
    let best: { at: number; body: unknown } | undefined;
    for (let i = 0; i < 3; i += 1) {
      const at = row[`created_at${i}`];
      if (at !== null && at !== undefined && (best === undefined || Number(at) > best.at)) best = { at: Number(at), body: row[`body${i}`] };
    }
    names.set(String(row.id), nameIn(best?.body, CARRIED[field] ?? ""));
  }
  return names;
}
