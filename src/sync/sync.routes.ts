/** POST /v1/sync/{collection}: devices and source systems push records in. */
import { Type } from "@sinclair/typebox";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { AppDeps } from "../app.js";
import { COLLECTIONS } from "../collections/registry.js";
import { principalOf, requireScope } from "../platform/auth.js";
import { methodNotAllowed } from "../platform/http-errors.js";
import { problemResponses } from "../platform/problem.js";
import { syncBatch } from "./sync.service.js";
import { MAX_BATCH } from "./sync.validate.js";

const SyncResult = Type.Object(
  { created: Type.Integer(), updated: Type.Integer(), unchanged: Type.Integer() },
  { additionalProperties: false },
);

export function registerSyncRoutes(app: FastifyInstance, { storage, clock = Date.now, deliveriesQueued, ingestion }: AppDeps): void {
  // Counted from the first byte to the answer (or a dropped connection): the delivery loop
  // gives way while syncs are served (webhooks/ingestion.ts).
  const counted = async (request: FastifyRequest, reply: FastifyReply) => {
    if (ingestion !== undefined) reply.raw.once("close", ingestion.begin());
  };
  for (const collection of COLLECTIONS) {
    const url = `/v1/sync/${collection.name}`;
    const rule =
      collection.kind === "transaction"
        ? "Transactions are immutable: re-sending one with the same content changes nothing; the same id with other content is 409 and nothing of the batch is applied."
        : "Master data is upserted: `updatedAt` moves only when the content changed.";
    app.post(
      url,
      {
        onRequest: [counted, requireScope(storage.db, "sync")],
        schema: {
          tags: ["Sync"],
          summary: `Sync ${collection.name.replace("-", " ")}`,
          description: `Stores 1 to ${MAX_BATCH} records atomically and idempotently. ${rule}`,
          security: [{ apiKey: [] }],
          body: Type.Object(
            { data: Type.Array(Type.Ref(collection.input), { minItems: 1, maxItems: MAX_BATCH }) },
            { additionalProperties: false },
          ),
          response: { 200: SyncResult, ...problemResponses(400, 401, 403, 409, 413, 415) },
        },
      },
      async (request) => {
        const { tenantId } = principalOf(request);
        return syncBatch(storage.db, collection, tenantId, request.body, clock, deliveriesQueued);
      },
    );
    app.route({ url, ...methodNotAllowed("POST", `send records with POST ${url}`) });
  }
}
