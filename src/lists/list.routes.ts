/** The nine list endpoints, one definition each collection declares, and their 405s. */
import { Type } from "@sinclair/typebox";
import type { FastifyInstance } from "fastify";
import type { Collection } from "../collections/define.js";
import { COLLECTIONS } from "../collections/registry.js";
import { authenticate, keyHashOf, requireWellFormedKey } from "../platform/auth.js";
import { methodNotAllowed } from "../platform/http-errors.js";
import { problemResponses } from "../platform/problem.js";
import type { AppDeps } from "../app.js";
import { querySchema, rawQuery } from "./list.query.js";
import { listPage } from "./list.service.js";

function pageSchema(collection: Collection) {
  return Type.Object(
    {
      data: Type.Array(Type.Ref(collection.item), { description: "At most `limit` items." }),
      cursor: Type.Union([Type.String(), Type.Null()], { description: "Send it back to get the next page; null on the last page." }),
    },
    { additionalProperties: false },
  );
}

export function registerListRoutes(app: FastifyInstance, { storage, cursors }: AppDeps): void {
  for (const collection of COLLECTIONS) {
    const path = `/v1/${collection.name}`;
    const order = collection.eventField === undefined ? "" : " The time window matches the event date (`" + collection.eventField + "`).";
    app.get(
      path,
      {
        onRequest: requireWellFormedKey,
        schema: {
          tags: [collection.kind === "transaction" ? "Transactions" : "Master data"],
          summary: `List ${collection.name.replace("-", " ")}`,
          description: `${collection.description} Newest first by \`createdAt\` (ties by \`id\`, descending); by name or code, ascending, when \`name\` or \`code\` is sent.${order}`,
          security: [{ apiKey: [] }],
          querystring: querySchema(collection),
          response: { 200: pageSchema(collection), ...problemResponses(400, 401, 403) },
        },
      },
      async (request, reply) => {
        const reader = {
          keyHash: keyHashOf(request),
          tenantOfKey: async () => (await authenticate(storage.db, request, "read")).tenantId,
        };
        const page = await listPage(storage.db, cursors, collection, reader, rawQuery(request.url));
        return reply.type("application/json; charset=utf-8").send(page);
      },
    );
    const readOnly = `${collection.name} are read-only through this API: list them with GET ${path}`;
    app.route({ url: path, ...methodNotAllowed("GET, HEAD", readOnly) });
    if (collection.kind === "transaction") {
      app.route({ url: `${path}/:id`, ...methodNotAllowed("", `${collection.name} cannot be read by id: page through GET ${path}`) });
    }
  }
}
