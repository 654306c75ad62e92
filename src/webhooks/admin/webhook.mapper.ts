/** Stored rows of the webhook tables as the admin API returns them: a row never reaches a client. */
import type { Static } from "@sinclair/typebox";
import { formatTime } from "../../platform/time.js";
import { isSuccess } from "../delivery/retry-policy.js";
import type { EndpointRow } from "../endpoint.repository.js";
import type { AttemptRow } from "./attempt.repository.js";
import type { WebhookAttempt, WebhookEndpoint } from "./webhook.schema.js";

const timeOrNull = (ms: number | null) => (ms === null ? null : formatTime(ms));

export function toEndpoint(row: EndpointRow): Static<typeof WebhookEndpoint> {
  return {
    id: row.id,
    url: row.url,
    description: row.description,
    events: row.events.split(" "),
    enabled: row.disabled_at === null,
    disabledReason: row.disabled_reason,
    previousSecretExpiresAt: timeOrNull(row.previous_secret_until),
    createdAt: formatTime(row.created_at),
    updatedAt: formatTime(row.updated_at),
  };
}

export function toAttempt(row: AttemptRow): Static<typeof WebhookAttempt> {
  return {
    id: row.id,
    deliveryId: row.delivery_id,
    webhookId: row.message_id,
    eventType: row.event_type,
    attemptedAt: formatTime(row.attempted_at),
    status: isSuccess(row.status_code) ? "succeeded" : "failed",
    responseCode: row.status_code,
    durationMs: row.duration_ms,
    error: row.error,
    nextAttemptAt: timeOrNull(row.next_attempt_at),
  };
}
