/** The nine list endpoints, one definition that each collection declares. */
import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import { COLLECTIONS } from "../collections/registry.js";
import type { CursorCodec } from "../platform/cursor.js";
import { pageSchemaOf } from "../platform/pager.js";
import { problemResponses } from "../platform/problem.js";
import { rawQuery } from "../platform/query-string.js";
import { refuseEveryMethod } from "../platform/route-book.js";
import type { Schema } from "../storage/schema.js";
import { authenticate, keyHashOf } from "../tenants/auth.hooks.js";
import { querySchema } from "./list.query.js";
import { listPage } from "./list.service.js";

/** `training-records` as `TrainingRecords`: the collection in an operationId. */
const pascal = (name: string) => name.replace(/(^|-)(\w)/g, (_, _dash: string, c: string) => c.toUpperCase());

export interface ListDeps {
  db: Kysely<Schema>;
  cursors: CursorCodec;
}

export function registerListRoutes(app: FastifyInstance, { db, cursors }: ListDeps): void {
  for (const collection of COLLECTIONS) {
    const path = `/v1/${collection.name}`;
    const order = collection.eventField === undefined ? "" : " The time window matches the event date (`" + collection.eventField + "`).";
    app.get(
      path,
      {
        config: {
          scope: "read",
          keyInQuery: true,
          refusal: `${collection.name} are read-only through this API: list them with GET ${path}`,
        },
        schema: {
          tags: [collection.kind === "transaction" ? "Transactions" : "Master data"],
          operationId: `list${pascal(collection.name)}`,
          summary: `List ${collection.name.replace("-", " ")}`,
          description: `${collection.description} Newest first by \`createdAt\` (ties by \`id\`, descending); by name or code, ascending, when \`name\` or \`code\` is sent.${order}`,
          security: [{ apiKey: [] }],
          querystring: querySchema(collection),
          response: { 200: pageSchemaOf(collection.item.$id ?? collection.name), ...problemResponses(400, 401, 403) },
        },
      },
      async (request, reply) => {
        const reader = {
          keyHash: keyHashOf(request),
          tenantOfKey: async () => (await authenticate(db, request, "read")).tenantId,
        };
        const page = await listPage(db, cursors, collection, reader, rawQuery(request.url));
        return reply.type("application/json; charset=utf-8").send(page);
      },
    );
    if (collection.kind === "transaction") {
      refuseEveryMethod(app, `${path}/:id`, `${collection.name} cannot be read by id: page through GET ${path}`);
    }
  }
}
