/** An endpoint's attempt log, as an admin reads it. */
import { sql, type Kysely } from "kysely";
import type { CursorPosition } from "../../platform/cursor.js";
import type { Schema } from "../../storage/schema.js";

/** A page of an endpoint's attempts, newest first by (attempted_at, id), after `after`. */
export async function attemptPage(
  db: Kysely<Schema>,
  tenantId: number,
  endpointId: string,
  after: CursorPosition | undefined,
  limit: number,
) {
  let query = db.selectFrom("webhook_attempts").selectAll().where("tenant_id", "=", tenantId).where("endpoint_id", "=", endpointId);
  if (after !== undefined) query = query.where((eb) => eb(eb.refTuple("attempted_at", "id"), "<", eb.tuple(Number(after.key), after.id)));
  return query.orderBy("attempted_at", "desc").orderBy("id", "desc").limit(sql.lit(limit)).execute();
}

export type AttemptRow = Awaited<ReturnType<typeof attemptPage>>[number];
