/** Replays, to an endpoint that must be enabled for them to be sent. */
import type { Kysely } from "kysely";
import { NoBody, readBody } from "../../platform/body.js";
import { ApiError } from "../../platform/errors.js";
import { compareTimes, parseRfc3339 } from "../../platform/time.js";
import type { Schema } from "../../storage/schema.js";
import { getEndpoint, noDelivery } from "./endpoint.service.js";
import { replayDelivery, replayFailed } from "./replay.repository.js";
import { REPLAY_RULES, ReplayBody } from "./webhook.schema.js";

async function enabledEndpoint(db: Kysely<Schema>, tenantId: number, id: string): Promise<void> {
  const endpoint = await getEndpoint(db, tenantId, id);
  if (endpoint.disabled_at !== null) {
    throw new ApiError("conflict", `the endpoint is disabled (${endpoint.disabled_reason}): enable it before replaying to it`);
  }
}

/** Replays one delivery; the action takes no body. */
export async function replayOne(
  db: Kysely<Schema>,
  tenantId: number,
  id: string,
  deliveryId: string,
  body: unknown,
  now: number,
): Promise<number> {
  readBody(NoBody, {}, body);
  await enabledEndpoint(db, tenantId, id);
  if (!(await replayDelivery(db, tenantId, id, deliveryId, now))) throw noDelivery(id, deliveryId);
  return 1;
}

/** Replays the failed deliveries written in the body's range, `since` to `until`, inclusive. */
export async function replayRange(db: Kysely<Schema>, tenantId: number, id: string, body: unknown, now: number): Promise<number> {
  const input = readBody(ReplayBody, REPLAY_RULES, body);
  // The schema's date-time format is the strict parser, so both parse.
  const since = parseRfc3339(input.since) ?? { ms: 0, subMillisecond: 0 };
  const until = parseRfc3339(input.until) ?? { ms: 0, subMillisecond: 0 };
  if (compareTimes(since, until) > 0) throw new ApiError("invalid_time_window", '"since" must be earlier than or equal to "until"');
  await enabledEndpoint(db, tenantId, id);
  // Stored times are whole milliseconds: a lower bound with a finer fraction rounds up.
  return replayFailed(db, tenantId, id, since.ms + (since.subMillisecond > 0 ? 1 : 0), until.ms, now);
}
