/**
 * The shapes of the webhook admin API, each one TypeBox schema: the request bodies, which the
 * routes both check (platform/body.ts) and document, and the answers, which the OpenAPI
 * document shows and the serializer writes.
 */
import { FormatRegistry, Type, type TSchema } from "@sinclair/typebox";
import { DateTime, Nullable, StringEnum, Text } from "../../collections/fields.js";
import type { FieldRules } from "../../platform/body.js";
import { EVENT_TYPES } from "../events.js";

// An absolute URL; which ones a webhook may use is checked after (endpoint-url.ts).
FormatRegistry.Set("uri", (value) => URL.canParse(value));
const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);

const DESCRIPTION_MAX = 500;
// Text as the records' fields take it (no control characters, well-formed), so both engines store it alike.
const Description = Nullable(Text("What the endpoint is for, for people; null when it has none.", DESCRIPTION_MAX));

const endpointFields = {
  id: Type.String({ description: "The endpoint's id, `we_...`." }),
  url: Type.String({ description: "Where events are sent." }),
  description: Description,
  events: Type.Array(Type.String(), { description: "The event types sent to it." }),
  enabled: Type.Boolean({ description: "False while it is disabled: nothing is sent, and new events are not queued for it." }),
  disabledReason: nullable(Type.String({ description: "Why it was disabled: by an admin, or because it answered 410 Gone." })),
  previousSecretExpiresAt: nullable(DateTime("Until then the secret before the last rotation signs too.")),
  createdAt: DateTime("When it was created."),
  updatedAt: DateTime("When it last changed."),
};

export const WebhookEndpoint = Type.Object(endpointFields, {
  $id: "WebhookEndpoint",
  additionalProperties: false,
  description: "A URL that receives the tenant's events.",
});

export const WebhookEndpointWithSecret = Type.Object(
  { ...endpointFields, secret: Type.String({ description: "The signing secret, `whsec_...`: shown only here; keep it safe." }) },
  { $id: "WebhookEndpointWithSecret", additionalProperties: false, description: "An endpoint, with its signing secret." },
);

export const WebhookAttempt = Type.Object(
  {
    id: Type.String(),
    deliveryId: Type.String({ description: "The delivery (one event to this endpoint); replay it by this id." }),
    webhookId: Type.String({ description: "The `webhook-id` header: the same on every attempt and replay of the event." }),
    eventType: Type.String(),
    attemptedAt: DateTime("When the request was sent."),
    status: Type.Union([Type.Literal("succeeded"), Type.Literal("failed")], { description: "Succeeded: the endpoint answered 2xx." }),
    responseCode: nullable(Type.Integer({ description: "The endpoint's HTTP status; null when none came (timeout, network error)." })),
    durationMs: Type.Integer(),
    error: nullable(Type.String({ description: "What went wrong, when it failed." })),
    nextAttemptAt: nullable(DateTime("When the event is sent again; null when this attempt ended the delivery.")),
  },
  { $id: "WebhookAttempt", additionalProperties: false, description: "One attempt to send an event to an endpoint." },
);

export const WebhookTest = Type.Object(
  {
    webhookId: Type.String({ description: "The `webhook-id` header the test event was sent with." }),
    eventType: Type.Literal("ping"),
    attemptedAt: DateTime("When the request was sent."),
    status: Type.Union([Type.Literal("succeeded"), Type.Literal("failed")], { description: "Succeeded: the endpoint answered 2xx." }),
    responseCode: nullable(Type.Integer({ description: "The endpoint's HTTP status; null when none came (timeout, network error)." })),
    durationMs: Type.Integer(),
    error: nullable(Type.String({ description: "What went wrong, when it failed." })),
  },
  { $id: "WebhookTest", additionalProperties: false, description: "What came of sending a test event to an endpoint." },
);

/** The schemas the answers refer to by `$ref`, added to the app once. */
export const WEBHOOK_SCHEMAS = [WebhookEndpoint, WebhookEndpointWithSecret, WebhookAttempt, WebhookTest];

export const Replayed = Type.Object(
  { replayed: Type.Integer({ description: "Deliveries queued to be sent again." }) },
  { additionalProperties: false },
);

export const IdParams = Type.Object({ id: Type.String() });
export const DeliveryParams = Type.Object({ id: Type.String(), deliveryId: Type.String() });

export const EndpointBody = Type.Object(
  {
    url: Type.String({ format: "uri", maxLength: 2000, examples: ["https://example.com/cribline-events"] }),
    events: Type.Array(StringEnum(EVENT_TYPES), { minItems: 1, uniqueItems: true }),
    description: Type.Optional(Description),
  },
  { additionalProperties: false },
);

export const ENDPOINT_RULES: FieldRules<typeof EndpointBody> = {
  url: {
    code: "invalid_url",
    expects: `an absolute https:// (or http://) URL of at most ${EndpointBody.properties.url.maxLength} characters`,
  },
  events: { code: "unknown_event", expects: `a non-empty list of event types, each once; the event types are ${EVENT_TYPES.join(", ")}` },
  description: {
    code: "invalid_body",
    expects: `text of 1 to ${DESCRIPTION_MAX} characters (UTF-16 code units) without control characters, or null for none`,
  },
};

/** A change of an endpoint: the fields to change, checked as at creation; at least one. */
export const EndpointPatch = Type.Object(
  {
    url: Type.Optional(EndpointBody.properties.url),
    events: Type.Optional(EndpointBody.properties.events),
    description: Type.Optional(Description),
    enabled: Type.Optional(
      Type.Boolean({ description: "True sends to it again (its paused deliveries at once); false disables it, as `/disable` does." }),
    ),
  },
  { additionalProperties: false, minProperties: 1 },
);

export const PATCH_RULES: FieldRules<typeof EndpointPatch> = {
  ...ENDPOINT_RULES,
  enabled: { code: "invalid_body", expects: "true or false" },
};

const WEEK_SECONDS = 7 * 24 * 60 * 60;

export const RotationBody = Type.Object(
  {
    gracePeriodSeconds: Type.Optional(
      Type.Integer({ minimum: 0, maximum: WEEK_SECONDS, default: 24 * 60 * 60, description: "How long the old secret signs too." }),
    ),
  },
  { additionalProperties: false, description: "Optional." },
);

export const ROTATION_RULES: FieldRules<typeof RotationBody> = {
  gracePeriodSeconds: { code: "invalid_body", expects: `a whole number of seconds from 0 to ${WEEK_SECONDS} (a week)` },
};

export const ReplayBody = Type.Object(
  { since: DateTime("Start of the range, inclusive."), until: DateTime("End of the range, inclusive.") },
  { additionalProperties: false },
);

const TIME_RULE = {
  code: "invalid_time",
  missing: "invalid_body",
  expects: "an RFC 3339 date-time with time and zone, such as 2026-11-22T10:15:30Z",
} as const;
export const REPLAY_RULES: FieldRules<typeof ReplayBody> = { since: TIME_RULE, until: TIME_RULE };
