/**
 * A test event for an endpoint: a signed `ping` sent at once, with nothing stored, so that an
 * integrator can check a receiver (its address, its signature check, its answer) without
 * syncing a record. It is sent as a delivery is: the endpoint's secrets sign it, the same
 * address guard and timeout apply, and a 2xx is success.
 */
import type { Static } from "@sinclair/typebox";
import type { Kysely } from "kysely";
import { NoBody, readBody } from "../../platform/body.js";
import { formatTime } from "../../platform/time.js";
import type { Schema } from "../../storage/schema.js";
import { post, type SendOptions } from "../delivery/http-post.js";
import { isSuccess } from "../delivery/retry-policy.js";
import { MESSAGE_ID_PREFIX, newId } from "../ids.js";
import { signingSecrets, webhookHeaders } from "../signature.js";
import { getEndpoint } from "./endpoint.service.js";
import type { WebhookTest } from "./webhook.schema.js";

export type TestOutcome = Static<typeof WebhookTest>;

/** Sends the endpoint a `ping` event now and says what came of it; 404 for an endpoint the tenant has not. */
export async function testEndpoint(
  db: Kysely<Schema>,
  tenantId: number,
  id: string,
  body: unknown,
  options: SendOptions,
  clock: () => number,
): Promise<TestOutcome> {
  readBody(NoBody, {}, body);
  const endpoint = await getEndpoint(db, tenantId, id);
  const sentAt = clock();
  const webhookId = newId(MESSAGE_ID_PREFIX, sentAt);
  const payload = `{"type":"ping","timestamp":"${formatTime(sentAt)}","data":{"endpointId":${JSON.stringify(endpoint.id)}}}`;
  const headers = webhookHeaders(signingSecrets(endpoint, sentAt), webhookId, Math.floor(sentAt / 1000), payload);
  const result = await post(endpoint.url, headers, payload, options);
  const succeeded = result.error === undefined && isSuccess(result.status);
  return {
    webhookId,
    eventType: "ping",
    attemptedAt: formatTime(sentAt),
    status: succeeded ? "succeeded" : "failed",
    responseCode: result.status ?? null,
    durationMs: Math.round(result.durationMs),
    // As the attempt log says it (delivery/recorder.ts): a status that is no success is the error.
    error: result.error ?? (succeeded ? null : `HTTP ${result.status}`),
  };
}
