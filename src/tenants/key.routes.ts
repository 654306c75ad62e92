/**
 * /v1/api-keys: a key with the `admin` scope makes, lists, reads and revokes its own tenant's
 * keys. Another tenant's key ids are 404, as if they did not exist.
 */
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { Type } from "@sinclair/typebox";
import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { CursorCodec } from "../platform/cursor.js";
import { problemResponses } from "../platform/problem.js";
import { PAGE_PARAMS, parsePageRequest, querySchemaOf, rawQuery } from "../platform/query-string.js";
import type { Schema } from "../storage/schema.js";
import { principalOf } from "./auth.hooks.js";
import { KEY_SCHEMAS, KeyBody, KeyIdParams } from "./key.schema.js";
import { createKey, currentKey, getKey, keysPage, revokeOwnKey, toApiKey } from "./key.service.js";

export const KEYS_BASE = "/v1/api-keys";
const BY_ID = `${KEYS_BASE}/:id`;
const ADMIN = { config: { scope: "admin" as const } };
const DOCS = { tags: ["API keys"], security: [{ apiKey: [] }] };

/** A page of keys, as every list answers. */
const KeyPage = Type.Object(
  {
    data: Type.Array(Type.Ref("ApiKey"), { description: "At most `limit` keys." }),
    cursor: Type.Union([Type.String(), Type.Null()], { description: "Send it back to get the next page; null on the last page." }),
  },
  { additionalProperties: false },
);

export function registerKeyRoutes(
  fastify: FastifyInstance,
  { db, cursors, clock }: { db: Kysely<Schema>; cursors: CursorCodec; clock: () => number },
): void {
  for (const schema of KEY_SCHEMAS) fastify.addSchema(schema);
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();

  app.post(
    KEYS_BASE,
    {
      ...ADMIN,
      schema: {
        operationId: "createApiKey",
        tags: DOCS.tags,
        summary: "Create an API key",
        description: "Makes a key of this tenant with the scopes given. The key itself is in the answer, and only there.",
        security: DOCS.security,
        body: KeyBody,
        response: { 201: Type.Ref("ApiKeyWithSecret"), ...problemResponses(400, 401, 403, 415) },
      },
    },
    async (request, reply) => {
      const created = await createKey(db, principalOf(request).tenantId, request.body, clock());
      return reply
        .code(201)
        .header("location", `${KEYS_BASE}/${created.row.keyId}`)
        .send({ ...toApiKey(created.row), key: created.key });
    },
  );

  app.get(
    KEYS_BASE,
    {
      ...ADMIN,
      schema: {
        operationId: "listApiKeys",
        tags: DOCS.tags,
        summary: "List API keys",
        description: "The tenant's keys, revoked and expired ones too, newest first by `createdAt` (ties by `id`, descending).",
        security: DOCS.security,
        querystring: querySchemaOf(PAGE_PARAMS),
        response: { 200: KeyPage, ...problemResponses(400, 401, 403) },
      },
    },
    async (request) => {
      const page = await keysPage(db, cursors, principalOf(request).tenantId, parsePageRequest(rawQuery(request.url)));
      return { data: page.rows.map(toApiKey), cursor: page.cursor };
    },
  );

  app.get(
    "/v1/key",
    {
      config: { scope: "key" },
      schema: {
        operationId: "getCurrentKey",
        tags: DOCS.tags,
        summary: "Read the key in use",
        description:
          "The key this request is made with (any valid key, whatever its scopes): its id, name, scopes and expiry, and its tenant's slug and time zone. What a client shows its user, or checks before it starts.",
        security: DOCS.security,
        response: { 200: Type.Ref("CurrentKey"), ...problemResponses(401) },
      },
    },
    async (request) => currentKey(db, principalOf(request)),
  );

  app.get(
    BY_ID,
    {
      ...ADMIN,
      schema: {
        operationId: "getApiKey",
        tags: DOCS.tags,
        summary: "Read an API key",
        security: DOCS.security,
        params: KeyIdParams,
        response: { 200: Type.Ref("ApiKey"), ...problemResponses(401, 403, 404) },
      },
    },
    async (request) => toApiKey(await getKey(db, principalOf(request).tenantId, request.params.id)),
  );

  app.post(
    `${BY_ID}/revoke`,
    {
      ...ADMIN,
      schema: {
        operationId: "revokeApiKey",
        tags: DOCS.tags,
        summary: "Revoke an API key",
        description:
          "From the next request on, in every process, the key is refused (401). Takes no body. Revoking a revoked key changes nothing and answers the same.",
        security: DOCS.security,
        params: KeyIdParams,
        response: { 200: Type.Ref("ApiKey"), ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request) => toApiKey(await revokeOwnKey(db, principalOf(request).tenantId, request.params.id, request.body, clock())),
  );
}
