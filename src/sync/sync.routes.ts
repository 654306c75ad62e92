/** POST /v1/sync/{collection}: devices and source systems push records in. */
import { Type } from "@sinclair/typebox";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import { COLLECTIONS } from "../collections/registry.js";
import { problemResponses } from "../platform/problem.js";
import type { Schema } from "../storage/schema.js";
import { principalOf } from "../tenants/auth.hooks.js";
import { syncBatch } from "./sync.service.js";
import { MAX_BATCH } from "./sync.validate.js";

/** `training-records` as `TrainingRecords`: the collection in an operationId. */
const pascal = (name: string) => name.replace(/(^|-)(\w)/g, (_, _dash: string, c: string) => c.toUpperCase());

export interface SyncDeps {
  db: Kysely<Schema>;
  /** Milliseconds since the epoch; createdAt and updatedAt come from it. */
  clock: () => number;
  /** Called when a sync has committed webhook deliveries: this process's loop sends them now. */
  deliveriesQueued?: () => void;
  /** Told when each sync request begins, and ends it when the request does (see webhooks/delivery/ingestion.ts). */
  ingestion?: { begin(): () => void };
}

const SyncResult = Type.Object(
  { created: Type.Integer(), updated: Type.Integer(), unchanged: Type.Integer() },
  { additionalProperties: false },
);

export function registerSyncRoutes(app: FastifyInstance, { db, clock, deliveriesQueued, ingestion }: SyncDeps): void {
  // Counted from the first byte to the answer (or a dropped connection): the delivery loop
  // gives way while syncs are served.
  const counted = async (request: FastifyRequest, reply: FastifyReply) => {
    if (ingestion !== undefined) reply.raw.once("close", ingestion.begin());
  };
  for (const collection of COLLECTIONS) {
    const url = `/v1/sync/${collection.name}`;
    const rule =
      collection.kind === "transaction"
        ? "Transactions are immutable: re-sending one with the same content changes nothing; the same id with other content is 409 and nothing of the batch is applied."
        : "Master data is upserted, each record sent replacing the stored one whole, as the source holds it now: an optional field left out (or null) becomes null, even if it had a value. `updatedAt` moves only when the content changed.";
    app.post(
      url,
      {
        config: { scope: "sync", refusal: `send records with POST ${url}` },
        onRequest: counted,
        schema: {
          tags: ["Sync"],
          operationId: `sync${pascal(collection.name)}`,
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
      async (request) => syncBatch(db, collection, principalOf(request).tenantId, request.body, clock, deliveriesQueued),
    );
  }
}
