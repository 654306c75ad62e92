/**
 * /v1/events: every change of a tenant's records, newest first, for integrators who poll
 * instead of (or besides) receiving webhooks; /v1/events/{id}: one of them. Read with the
 * `read` scope, paged like every list.
 */
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import { COLLECTIONS } from "../collections/registry.js";
import type { CursorCodec } from "../platform/cursor.js";
import { pageSchemaOf } from "../platform/pager.js";
import { problemResponses } from "../platform/problem.js";
import { rawQuery } from "../platform/query-string.js";
import type { Schema } from "../storage/schema.js";
import { authenticate, keyHashOf, principalOf } from "../tenants/auth.hooks.js";
import { EVENT_TYPES } from "../webhooks/events.js";
import { eventQuerySchema } from "./event.query.js";
import { eventById, eventsPage, type EventReading } from "./event.service.js";

export interface EventDeps extends EventReading {
  db: Kysely<Schema>;
  cursors: CursorCodec;
}

const EventItem = Type.Object(
  {
    id: Type.String({ description: "The event's id: the `webhook-id` header of every webhook delivery of it." }),
    type: Type.String({ enum: [...EVENT_TYPES], description: "What happened: `<record>.created`, or `<record>.updated` for master data." }),
    createdAt: Type.String({ format: "date-time", description: "When cribline recorded the change." }),
    data: Type.Union(
      COLLECTIONS.map((c) => Type.Ref(c.item.$id ?? c.name)),
      { description: "The record as its list showed it when the event was made; for an update, its new state." },
    ),
  },
  { additionalProperties: false, $id: "Event", description: "A change of one of the tenant's records." },
);

const DOCS = { tags: ["Events"], security: [{ apiKey: [] }] };
const RETENTION = "Events are kept for `CRIBLINE_EVENT_RETENTION_DAYS` days (30 by default); older ones are not shown.";

export function registerEventRoutes(fastify: FastifyInstance, { db, cursors, ...reading }: EventDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.addSchema(EventItem);
  // Untyped: the page is sent as JSON text (see eventsPage), as the record lists send theirs.
  fastify.get(
    "/v1/events",
    {
      config: { scope: "read", keyInQuery: true },
      schema: {
        ...DOCS,
        operationId: "listEvents",
        summary: "List events",
        description: `Every record created, and every master-data record whose content changed, newest first by \`createdAt\` (ties by \`id\`, descending): the events that webhooks carry, whether or not an endpoint takes them. An event stored after a page was read is newer than every event on it, so a poller that stops at the newest event it saw misses none. ${RETENTION}`,
        querystring: eventQuerySchema(),
        response: { 200: pageSchemaOf("Event"), ...problemResponses(400, 401, 403) },
      },
    },
    async (request, reply) => {
      const reader = { keyHash: keyHashOf(request), tenantOfKey: async () => (await authenticate(db, request, "read")).tenantId };
      return reply.type("application/json; charset=utf-8").send(await eventsPage(db, cursors, reader, reading, rawQuery(request.url)));
    },
  );
  app.get(
    "/v1/events/:id",
    {
      config: { scope: "read" },
      schema: {
        ...DOCS,
        operationId: "getEvent",
        summary: "Read an event",
        description: `One event by its id (the \`webhook-id\` of its deliveries). ${RETENTION}`,
        params: Type.Object({ id: Type.String() }),
        response: { 200: Type.Ref(EventItem), ...problemResponses(401, 403, 404) },
      },
    },
    async (request, reply) => {
      const event = await eventById(db, principalOf(request).tenantId, request.params.id, reading);
      return reply.type("application/json; charset=utf-8").send(event);
    },
  );
}
