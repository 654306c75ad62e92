/** Webhook endpoints in storage. */
import { randomBytes } from "node:crypto";
import type { Kysely } from "kysely";
import { QueryTemplates } from "../storage/query-template.js";
import type { Schema } from "../storage/schema.js";
import { newSecret } from "./signature.js";

export interface NewEndpoint {
  id: string;
  url: string;
  events: string[];
  secret: string;
  createdAt: number;
}

export async function insertEndpoint(
  db: Kysely<Schema>,
  tenantId: number,
  url: string,
  events: string[],
  now: number,
): Promise<NewEndpoint> {
  const endpoint: NewEndpoint = { id: `we_${randomBytes(12).toString("base64url")}`, url, events, secret: newSecret(), createdAt: now };
  await db
    .insertInto("webhook_endpoints")
    .values({
      tenant_id: tenantId,
      id: endpoint.id,
      url,
      events: events.join(" "),
      secret: endpoint.secret,
      previous_secret: null,
      previous_secret_until: null,
      disabled_at: null,
      disabled_reason: null,
      created_at: now,
      updated_at: now,
    })
    .execute();
  return endpoint;
}

export async function disableEndpoint(db: Kysely<Schema>, tenantId: number, id: string, reason: string, now: number): Promise<void> {
  await db
    .updateTable("webhook_endpoints")
    .set({ disabled_at: now, disabled_reason: reason, updated_at: now })
    .where("tenant_id", "=", tenantId)
    .where("id", "=", id)
    .execute();
}

const subscribedQueries = new QueryTemplates<{ id: string; events: string }>();

/** A tenant's enabled endpoints and the event types each takes (one index range). */
export async function enabledEndpoints(db: Kysely<Schema>, tenantId: number): Promise<{ id: string; events: Set<string> }[]> {
  const query = subscribedQueries.fill(db, "webhook_endpoints:enabled", { tenantId }, (s) =>
    db.selectFrom("webhook_endpoints").select(["id", "events"]).where("tenant_id", "=", s.tenantId).where("disabled_at", "is", null),
  );
  return (await db.executeQuery(query)).rows.map((row) => ({ id: row.id, events: new Set(row.events.split(" ")) }));
}
