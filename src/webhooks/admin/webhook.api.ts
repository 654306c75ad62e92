/** Where the webhook admin API lives, and what its routes share. */
import type { FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { CursorCodec } from "../../platform/cursor.js";
import type { Schema } from "../../storage/schema.js";
import type { Resolver } from "./endpoint-url.js";
import { checkIds } from "./endpoint.service.js";

export interface WebhookAdminDeps {
  db: Kysely<Schema>;
  cursors: CursorCodec;
  /** Let endpoints be on loopback and private networks (local development and tests). */
  allowPrivate: boolean;
  /** How endpoint names are resolved when they are registered; the system's by default. */
  resolveHost?: Resolver;
  clock: () => number;
}

export const BASE = "/v1/webhook-endpoints";
export const BY_ID = `${BASE}/:id`;

/** Every admin route needs a key with the `admin` scope. */
export const ADMIN = { config: { scope: "admin" as const } };
export const DOCS = { tags: ["Webhooks"], security: [{ apiKey: [] }] };

/** A preHandler: a path whose ids cribline could not have made is a 404 before any query. */
export async function knownIds(request: FastifyRequest): Promise<void> {
  checkIds(request.params as { id?: string; deliveryId?: string });
}
