/**
 * The webhook admin API (decisions section 7), for keys with the `admin` scope: endpoints
 * (create, list, read, delete, disable, enable, rotate the secret), each endpoint's attempt
 * log, and replays. Lists follow the conventions of every list: newest first, `limit` and an
 * authenticated `cursor`, strict parameters, `cursor: null` on the last page.
 */
import { Type } from "@sinclair/typebox";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance, FastifyRequest } from "fastify";
import type { AppDeps } from "../app.js";
import { DateTime } from "../collections/fields.js";
import { parsePageQuery, pageQuerySchema, rawQuery } from "../lists/list.query.js";
import { cursorPosition } from "../lists/list.service.js";
import { principalOf, requireScope } from "../platform/auth.js";
import type { CursorCodec } from "../platform/cursor.js";
import { ApiError } from "../platform/errors.js";
import { methodNotAllowed } from "../platform/http-errors.js";
import { problemResponses } from "../platform/problem.js";
import { formatTime } from "../platform/time.js";
import {
  deleteEndpoint,
  endpointPage,
  findEndpoint,
  insertEndpoint,
  rotateSecret,
  setEndpointDisabled,
  type EndpointRow,
} from "./endpoint.repository.js";
import { expectNoBody, parseEndpointInput, parseReplayRange, parseRotation, MAX_GRACE_SECONDS } from "./endpoint.validate.js";
import { EVENT_TYPES } from "./events.js";
import { attemptPage, replayDelivery, replayFailed } from "./log.repository.js";

const nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()]);

const endpointFields = {
  id: Type.String({ description: "The endpoint's id, `we_...`." }),
  url: Type.String({ description: "Where events are sent." }),
  events: Type.Array(Type.String(), { description: "The event types sent to it." }),
  enabled: Type.Boolean({ description: "False while it is disabled: nothing is sent, and new events are not queued for it." }),
  disabledReason: nullable(Type.String({ description: "Why it was disabled: by an admin, or because it answered 410 Gone." })),
  previousSecretExpiresAt: nullable(DateTime("Until then the secret before the last rotation signs too.")),
  createdAt: DateTime("When it was created."),
  updatedAt: DateTime("When it last changed."),
};
const WebhookEndpoint = Type.Object(endpointFields, {
  $id: "WebhookEndpoint",
  additionalProperties: false,
  description: "A URL that receives the tenant's events.",
});
const WebhookEndpointWithSecret = Type.Object(
  { ...endpointFields, secret: Type.String({ description: "The signing secret, `whsec_...`: shown only here; keep it safe." }) },
  { $id: "WebhookEndpointWithSecret", additionalProperties: false, description: "An endpoint, with its signing secret." },
);
const WebhookAttempt = Type.Object(
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
const Replayed = Type.Object(
  { replayed: Type.Integer({ description: "Deliveries queued to be sent again." }) },
  { additionalProperties: false },
);

function pageOf(item: string) {
  return Type.Object(
    {
      data: Type.Array(Type.Ref(item), { description: "At most `limit` items." }),
      cursor: Type.Union([Type.String(), Type.Null()], { description: "Send it back to get the next page; null on the last page." }),
    },
    { additionalProperties: false },
  );
}

function toEndpoint(row: EndpointRow) {
  return {
    id: row.id,
    url: row.url,
    events: row.events.split(" "),
    enabled: row.disabled_at === null,
    disabledReason: row.disabled_reason,
    previousSecretExpiresAt: row.previous_secret_until === null ? null : formatTime(row.previous_secret_until),
    createdAt: formatTime(row.created_at),
    updatedAt: formatTime(row.updated_at),
  };
}

type AttemptRow = Awaited<ReturnType<typeof attemptPage>>[number];

function toAttempt(row: AttemptRow) {
  const succeeded = row.status_code !== null && row.status_code >= 200 && row.status_code < 300;
  return {
    id: row.id,
    deliveryId: row.delivery_id,
    webhookId: row.message_id,
    eventType: row.event_type,
    attemptedAt: formatTime(row.attempted_at),
    status: succeeded ? ("succeeded" as const) : ("failed" as const),
    responseCode: row.status_code,
    durationMs: row.duration_ms,
    error: row.error,
    nextAttemptAt: row.next_attempt_at === null ? null : formatTime(row.next_attempt_at),
  };
}

const NO_FILTERS = "[]";

/** One page of an admin list: `fetch` returns up to `limit` rows after the cursor's position. */
async function page<R, T>(
  cursors: CursorCodec,
  request: FastifyRequest,
  list: string,
  fetch: (after: { key: number; id: string } | undefined, limit: number) => Promise<R[]>,
  position: (row: R) => { key: number; id: string },
  render: (row: R) => T,
): Promise<{ data: T[]; cursor: string | null }> {
  const { tenantId } = principalOf(request);
  const query = parsePageQuery(rawQuery(request.url));
  const after = query.cursor === undefined ? undefined : cursorPosition(cursors, query.cursor, tenantId, list, NO_FILTERS);
  const rows = await fetch(after === undefined ? undefined : { key: Number(after.key), id: after.id }, query.limit + 1);
  const shown = rows.slice(0, query.limit);
  const last = shown[shown.length - 1];
  const cursor = rows.length > query.limit && last !== undefined ? cursors.encode(tenantId, list, NO_FILTERS, position(last)) : null;
  return { data: shown.map(render), cursor };
}

function notFound(id: string): ApiError {
  return new ApiError("not_found", `no webhook endpoint with id ${JSON.stringify(id.slice(0, 100))}`);
}

/** What an endpoint's or a delivery's id is made of (see newId in outbox.ts, insertEndpoint). */
const ID_ALPHABET = /^[A-Za-z0-9_-]{1,100}$/;

/**
 * An id in the path that cribline could not have made names nothing: 404 before any query.
 * PostgreSQL cannot even compare text holding a NUL (`%00`), and answered 500.
 */
async function knownIds(request: FastifyRequest): Promise<void> {
  const { id, deliveryId } = request.params as { id?: string; deliveryId?: string };
  if (id !== undefined && !ID_ALPHABET.test(id)) throw notFound(id);
  if (deliveryId !== undefined && !ID_ALPHABET.test(deliveryId)) throw noDelivery(id ?? "", deliveryId);
}

function noDelivery(endpointId: string, deliveryId: string): ApiError {
  return new ApiError("not_found", `endpoint ${endpointId} has no delivery with id ${JSON.stringify(deliveryId.slice(0, 100))}`);
}

function found<T>(value: T | undefined, id: string): T {
  if (value === undefined) throw notFound(id);
  return value;
}

const BASE = "/v1/webhook-endpoints";
const TAGS = ["Webhooks"];
const SECURITY = [{ apiKey: [] }];
const IdParams = Type.Object({ id: Type.String() });

export function registerWebhookRoutes(fastify: FastifyInstance, { storage, cursors, config, clock = Date.now }: AppDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  const { db } = storage;
  const admin = requireScope(db, "admin");
  const tenantOf = (request: FastifyRequest) => principalOf(request).tenantId;
  for (const schema of [WebhookEndpoint, WebhookEndpointWithSecret, WebhookAttempt]) app.addSchema(schema);

  app.post(
    BASE,
    {
      onRequest: admin,
      schema: {
        tags: TAGS,
        summary: "Create a webhook endpoint",
        description: `Events of the listed types are sent to \`url\`, signed as Standard Webhooks says with the secret in the answer (shown only here). The event types: ${EVENT_TYPES.map((e) => `\`${e}\``).join(", ")}. Loopback and private addresses are refused.`,
        security: SECURITY,
        body: Type.Object(
          {
            url: Type.String({ format: "uri", maxLength: 2000, examples: ["https://example.com/cribline-events"] }),
            events: Type.Array(Type.String({ enum: [...EVENT_TYPES] }), { minItems: 1, uniqueItems: true }),
          },
          { additionalProperties: false },
        ),
        response: { 201: Type.Ref(WebhookEndpointWithSecret), ...problemResponses(400, 401, 403, 415) },
      },
    },
    async (request, reply) => {
      const input = await parseEndpointInput(request.body, config.webhooksAllowPrivate);
      const created = await insertEndpoint(db, tenantOf(request), input.url, input.events, clock());
      const row = found(await findEndpoint(db, tenantOf(request), created.id), created.id);
      return reply
        .code(201)
        .header("location", `${BASE}/${created.id}`)
        .send({ ...toEndpoint(row), secret: created.secret });
    },
  );

  app.get(
    BASE,
    {
      onRequest: admin,
      schema: {
        tags: TAGS,
        summary: "List webhook endpoints",
        description: "Newest first by `createdAt` (ties by `id`, descending).",
        security: SECURITY,
        querystring: pageQuerySchema(),
        response: { 200: pageOf("WebhookEndpoint"), ...problemResponses(400, 401, 403) },
      },
    },
    async (request) =>
      page(
        cursors,
        request,
        "webhook-endpoints",
        (after, limit) => endpointPage(db, tenantOf(request), after, limit),
        (row) => ({ key: row.created_at, id: row.id }),
        toEndpoint,
      ),
  );

  const byId = `${BASE}/:id`;
  app.get(
    byId,
    {
      onRequest: admin,
      preHandler: knownIds,
      schema: {
        tags: TAGS,
        summary: "Read a webhook endpoint",
        security: SECURITY,
        params: IdParams,
        response: { 200: Type.Ref(WebhookEndpoint), ...problemResponses(401, 403, 404) },
      },
    },
    async (request) => toEndpoint(found(await findEndpoint(db, tenantOf(request), request.params.id), request.params.id)),
  );

  app.delete(
    byId,
    {
      onRequest: admin,
      preHandler: knownIds,
      schema: {
        tags: TAGS,
        summary: "Delete a webhook endpoint",
        description: "Deletes the endpoint with its pending deliveries and its attempt log.",
        security: SECURITY,
        params: IdParams,
        response: { 204: Type.Null({ description: "Deleted." }), ...problemResponses(401, 403, 404) },
      },
    },
    async (request, reply) => {
      if (!(await deleteEndpoint(db, tenantOf(request), request.params.id))) throw notFound(request.params.id);
      return reply.code(204).send(null);
    },
  );

  for (const [action, summary, description, reason] of [
    [
      "disable",
      "Disable a webhook endpoint",
      "Stops sending to it: its pending deliveries wait, and events that arrive meanwhile are not queued for it (re-read them with a time window).",
      "disabled by an admin",
    ],
    ["enable", "Enable a webhook endpoint", "Sends to it again, starting with the deliveries that waited while it was disabled.", null],
  ] as const) {
    app.post(
      `${byId}/${action}`,
      {
        onRequest: admin,
        preHandler: knownIds,
        schema: {
          tags: TAGS,
          summary,
          description: `${description} Takes no body.`,
          security: SECURITY,
          params: IdParams,
          response: { 200: Type.Ref(WebhookEndpoint), ...problemResponses(400, 401, 403, 404) },
        },
      },
      async (request) => {
        expectNoBody(request.body);
        const row = await setEndpointDisabled(db, tenantOf(request), request.params.id, reason, clock());
        return toEndpoint(found(row, request.params.id));
      },
    );
  }

  app.post(
    `${byId}/rotate-secret`,
    {
      onRequest: admin,
      preHandler: knownIds,
      schema: {
        tags: TAGS,
        summary: "Rotate an endpoint's signing secret",
        description:
          "Makes a new secret, returned once. Until `previousSecretExpiresAt` every event is signed with both (two signatures in `webhook-signature`), so a receiver can switch without missing one.",
        security: SECURITY,
        params: IdParams,
        body: Type.Object(
          {
            gracePeriodSeconds: Type.Optional(
              Type.Integer({ minimum: 0, maximum: MAX_GRACE_SECONDS, default: 86400, description: "How long the old secret signs too." }),
            ),
          },
          { additionalProperties: false, description: "Optional." },
        ),
        response: { 200: Type.Ref(WebhookEndpointWithSecret), ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const graceSeconds = parseRotation(request.body);
      const row = found(await rotateSecret(db, tenantOf(request), request.params.id, graceSeconds * 1000, clock()), request.params.id);
      return { ...toEndpoint(row), secret: row.secret };
    },
  );

  app.get(
    `${byId}/attempts`,
    {
      onRequest: admin,
      preHandler: knownIds,
      schema: {
        tags: TAGS,
        summary: "List an endpoint's delivery attempts",
        description:
          "Every attempt to send an event to the endpoint within the retention period (`CRIBLINE_WEBHOOK_RETENTION_DAYS`, 30 days by default), newest first by `attemptedAt` (ties by `id`, descending).",
        security: SECURITY,
        params: IdParams,
        querystring: pageQuerySchema(),
        response: { 200: pageOf("WebhookAttempt"), ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const { id } = request.params;
      found(await findEndpoint(db, tenantOf(request), id), id);
      return page(
        cursors,
        request,
        `webhook-endpoints/${id}/attempts`,
        (after, limit) => attemptPage(db, tenantOf(request), id, after, limit),
        (row) => ({ key: row.attempted_at, id: row.id }),
        toAttempt,
      );
    },
  );

  /** The endpoint, which must be enabled for a replay to be sent. */
  const enabledEndpoint = async (request: FastifyRequest, id: string) => {
    const endpoint = found(await findEndpoint(db, tenantOf(request), id), id);
    if (endpoint.disabled_at !== null) {
      throw new ApiError("conflict", `the endpoint is disabled (${endpoint.disabled_reason}): enable it before replaying to it`);
    }
  };
  const DISABLED: [number, string] = [409, "The endpoint is disabled: enable it first."];

  app.post(
    `${byId}/deliveries/:deliveryId/replay`,
    {
      onRequest: admin,
      preHandler: knownIds,
      schema: {
        tags: TAGS,
        summary: "Replay one delivery",
        description:
          "Sends the event again to the endpoint, with the same `webhook-id`, from the start of the retry schedule, whatever became of it before. Takes no body. A delivery that ended longer ago than the retention period (`CRIBLINE_WEBHOOK_RETENTION_DAYS`, 30 days by default) is deleted: 404.",
        security: SECURITY,
        params: Type.Object({ id: Type.String(), deliveryId: Type.String() }),
        response: { 202: Replayed, ...problemResponses(400, 401, 403, 404, DISABLED) },
      },
    },
    async (request, reply) => {
      expectNoBody(request.body);
      const { id, deliveryId } = request.params;
      await enabledEndpoint(request, id);
      if (!(await replayDelivery(db, tenantOf(request), id, deliveryId, clock()))) {
        throw noDelivery(id, deliveryId);
      }
      return reply.code(202).send({ replayed: 1 });
    },
  );

  app.post(
    `${byId}/replay`,
    {
      onRequest: admin,
      preHandler: knownIds,
      schema: {
        tags: TAGS,
        summary: "Replay the failed deliveries of a time range",
        description:
          "Sends every failed delivery of the endpoint whose event was written from `since` to `until` (inclusive) again, each with its own `webhook-id`, from the start of the retry schedule. Deliveries that ended longer ago than the retention period (30 days by default) are deleted and not replayed.",
        security: SECURITY,
        params: IdParams,
        body: Type.Object(
          { since: DateTime("Start of the range, inclusive."), until: DateTime("End of the range, inclusive.") },
          { additionalProperties: false },
        ),
        response: { 202: Replayed, ...problemResponses(400, 401, 403, 404, DISABLED, 415) },
      },
    },
    async (request, reply) => {
      const range = parseReplayRange(request.body);
      await enabledEndpoint(request, request.params.id);
      const replayed = await replayFailed(db, tenantOf(request), request.params.id, range.since, range.until, clock());
      return reply.code(202).send({ replayed });
    },
  );

  // Every other method on these paths is a 405 naming the ones that work.
  for (const [url, allow] of [
    [BASE, "GET, HEAD, POST"],
    [byId, "GET, HEAD, DELETE"],
    [`${byId}/disable`, "POST"],
    [`${byId}/enable`, "POST"],
    [`${byId}/rotate-secret`, "POST"],
    [`${byId}/attempts`, "GET, HEAD"],
    [`${byId}/deliveries/:deliveryId/replay`, "POST"],
    [`${byId}/replay`, "POST"],
  ] as const) {
    app.route({ url, ...methodNotAllowed(allow, `${url.replace(/:(\w+)/g, "{$1}")} allows ${allow}`) });
  }
}
