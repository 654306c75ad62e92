/** An endpoint's attempt log, as an admin reads it. */
import { sql, type Kysely } from "kysely";
import type { CursorPosition } from "../../platform/cursor.js";
import type { Schema } from "../../storage/schema.js";

/** Which attempts a page shows: by outcome (a 2xx answer or not) and by when they were made (inclusive bounds). */
export interface AttemptFilters {
  status: "succeeded" | "failed" | undefined;
  since: number | undefined;
  until: number | undefined;
}

/** A page of an endpoint's attempts, newest first by (attempted_at, id), after `after`. */
export async function attemptPage(
  db: Kysely<Schema>,
  tenantId: number,
  endpointId: string,
  filters: AttemptFilters,
  after: CursorPosition | undefined,
  limit: number,
) {
  let query = db.selectFrom("webhook_attempts").selectAll().where("tenant_id", "=", tenantId).where("endpoint_id", "=", endpointId);
  if (filters.since !== undefined) query = query.where("attempted_at", ">=", filters.since);
  if (filters.until !== undefined) query = query.where("attempted_at", "<=", filters.until);
  if (filters.status === "succeeded") query = query.where("status_code", ">=", 200).where("status_code", "<", 300);
  if (filters.status === "failed") {
    query = query.where((eb) => eb.or([eb("status_code", "is", null), eb("status_code", "<", 200), eb("status_code", ">=", 300)]));
  }
  if (after !== undefined) query = query.where((eb) => eb(eb.refTuple("attempted_at", "id"), "<", eb.tuple(Number(after.key), after.id)));
  return query.orderBy("attempted_at", "desc").orderBy("id", "desc").limit(sql.lit(limit)).execute();
}

export type AttemptRow = Awaited<ReturnType<typeof attemptPage>>[number];
