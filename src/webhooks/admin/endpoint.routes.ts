/** /v1/webhook-endpoints: create, list, read, change, delete, disable, enable, rotate the secret, send a test event. */
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import type { FastifyInstance } from "fastify";
import { pageSchemaOf } from "../../platform/pager.js";
import { problemResponses } from "../../platform/problem.js";
import { parsePageRequest, querySchemaOf, rawQuery, PAGE_PARAMS } from "../../platform/query-string.js";
import { principalOf } from "../../tenants/auth.hooks.js";
import { EVENT_TYPES } from "../events.js";
import {
  createEndpoint,
  DISABLED_BY_ADMIN,
  endpointsPage,
  getEndpoint,
  removeEndpoint,
  rotateEndpointSecret,
  switchEndpoint,
  updateEndpoint,
} from "./endpoint.service.js";
import { DEFAULT_DELIVERY_OPTIONS } from "../delivery/delivery.options.js";
import { testEndpoint } from "./endpoint-test.service.js";
import { toEndpoint } from "./webhook.mapper.js";
import { ADMIN, BASE, BY_ID, DOCS, knownIds, type WebhookAdminDeps } from "./webhook.api.js";
import {
  EndpointBody,
  EndpointPatch,
  IdParams,
  RotationBody,
  WebhookEndpoint,
  WebhookEndpointWithSecret,
  WebhookTest,
} from "./webhook.schema.js";

export function registerEndpointRoutes(
  fastify: FastifyInstance,
  { db, cursors, allowPrivate, clock, resolveHost }: WebhookAdminDeps,
): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post(
    BASE,
    {
      ...ADMIN,
      schema: {
        tags: DOCS.tags,
        operationId: "createWebhookEndpoint",
        summary: "Create a webhook endpoint",
        description: `Events of the listed types are sent to \`url\`, signed as Standard Webhooks says with the secret in the answer (shown only here). The event types: ${EVENT_TYPES.map((e) => `\`${e}\``).join(", ")}. Loopback and private addresses are refused. \`description\` (optional) says what the endpoint is for.`,
        security: DOCS.security,
        body: EndpointBody,
        response: { 201: Type.Ref(WebhookEndpointWithSecret), ...problemResponses(400, 401, 403, 415) },
      },
    },
    async (request, reply) => {
      const { row, secret } = await createEndpoint(db, principalOf(request).tenantId, request.body, allowPrivate, clock(), resolveHost);
      return reply
        .code(201)
        .header("location", `${BASE}/${row.id}`)
        .send({ ...toEndpoint(row), secret });
    },
  );

  app.get(
    BASE,
    {
      ...ADMIN,
      schema: {
        tags: DOCS.tags,
        operationId: "listWebhookEndpoints",
        summary: "List webhook endpoints",
        description: "Newest first by `createdAt` (ties by `id`, descending).",
        security: DOCS.security,
        querystring: querySchemaOf(PAGE_PARAMS),
        response: { 200: pageSchemaOf("WebhookEndpoint"), ...problemResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = await endpointsPage(db, cursors, principalOf(request).tenantId, parsePageRequest(rawQuery(request.url)));
      return { data: page.rows.map(toEndpoint), cursor: page.cursor };
    },
  );

  app.get(
    BY_ID,
    {
      ...ADMIN,
      preHandler: knownIds,
      schema: {
        tags: DOCS.tags,
        operationId: "getWebhookEndpoint",
        summary: "Read a webhook endpoint",
        security: DOCS.security,
        params: IdParams,
        response: { 200: Type.Ref(WebhookEndpoint), ...problemResponses(401, 403, 404) },
      },
    },
    async (request) => toEndpoint(await getEndpoint(db, principalOf(request).tenantId, request.params.id)),
  );

  app.patch(
    BY_ID,
    {
      ...ADMIN,
      preHandler: knownIds,
      schema: {
        tags: DOCS.tags,
        operationId: "updateWebhookEndpoint",
        summary: "Change a webhook endpoint",
        description:
          "Changes the fields sent (at least one), checked as at creation; the others, the secret and the attempt log stay. Every delivery sent from then on goes to the new `url`, those already queued included; events of the new `events` are queued from then on, and those already queued are still sent. `enabled` does what `/enable` and `/disable` do; `description: null` removes the description; a field equal to what is stored changes nothing.",
        security: DOCS.security,
        params: IdParams,
        body: EndpointPatch,
        response: { 200: Type.Ref(WebhookEndpoint), ...problemResponses(400, 401, 403, 404, 415) },
      },
    },
    async (request) =>
      toEndpoint(
        await updateEndpoint(db, principalOf(request).tenantId, request.params.id, request.body, allowPrivate, clock(), resolveHost),
      ),
  );

  app.delete(
    BY_ID,
    {
      ...ADMIN,
      preHandler: knownIds,
      schema: {
        tags: DOCS.tags,
        operationId: "deleteWebhookEndpoint",
        summary: "Delete a webhook endpoint",
        description: "Deletes the endpoint with its pending deliveries and its attempt log.",
        security: DOCS.security,
        params: IdParams,
        response: { 204: Type.Null({ description: "Deleted." }), ...problemResponses(401, 403, 404) },
      },
    },
    async (request, reply) => {
      await removeEndpoint(db, principalOf(request).tenantId, request.params.id);
      return reply.code(204).send(null);
    },
  );

  for (const [action, summary, description, reason] of [
    [
      "disable",
      "Disable a webhook endpoint",
      "Stops sending to it: its pending deliveries wait, and events that arrive meanwhile are not queued for it (re-read them with a time window).",
      DISABLED_BY_ADMIN,
    ],
    ["enable", "Enable a webhook endpoint", "Sends to it again, starting with the deliveries that waited while it was disabled.", null],
  ] as const) {
    app.post(
      `${BY_ID}/${action}`,
      {
        ...ADMIN,
        preHandler: knownIds,
        schema: {
          tags: DOCS.tags,
          operationId: `${action}WebhookEndpoint`,
          summary,
          description: `${description} Takes no body.`,
          security: DOCS.security,
          params: IdParams,
          response: { 200: Type.Ref(WebhookEndpoint), ...problemResponses(400, 401, 403, 404) },
        },
      },
      async (request) =>
        toEndpoint(await switchEndpoint(db, principalOf(request).tenantId, request.params.id, request.body, reason, clock())),
    );
  }

  app.post(
    `${BY_ID}/rotate-secret`,
    {
      ...ADMIN,
      preHandler: knownIds,
      schema: {
        tags: DOCS.tags,
        operationId: "rotateWebhookEndpointSecret",
        summary: "Rotate an endpoint's signing secret",
        description:
          "Makes a new secret, returned once. Until `previousSecretExpiresAt` every event is signed with both (two signatures in `webhook-signature`), so a receiver can switch without missing one.",
        security: DOCS.security,
        params: IdParams,
        body: RotationBody,
        response: { 200: Type.Ref(WebhookEndpointWithSecret), ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const row = await rotateEndpointSecret(db, principalOf(request).tenantId, request.params.id, request.body, clock());
      return { ...toEndpoint(row), secret: row.secret };
    },
  );

  app.post(
    `${BY_ID}/test`,
    {
      ...ADMIN,
      preHandler: knownIds,
      schema: {
        tags: DOCS.tags,
        operationId: "testWebhookEndpoint",
        summary: "Send a test event to a webhook endpoint",
        description:
          'Sends the endpoint a signed `ping` event now, `{"type":"ping","timestamp":...,"data":{"endpointId":...}}`, whatever event types it takes and whether or not it is disabled, and answers with what came of it. Nothing is stored: the attempt is not among the endpoint\'s attempts, and nothing is sent again. Takes no body.',
        security: DOCS.security,
        params: IdParams,
        response: { 200: Type.Ref(WebhookTest), ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request) =>
      testEndpoint(
        db,
        principalOf(request).tenantId,
        request.params.id,
        request.body,
        { timeoutMs: DEFAULT_DELIVERY_OPTIONS.timeoutMs, allowPrivate },
        clock,
      ),
  );
}
