/**
 * Bearer API keys. A key of the wrong shape or checksum is refused without a database
 * look-up; every other key is looked up by hash on every request, so a revocation takes
 * effect on the next request in every process. The lists look the key up inside their page
 * query (one round trip to the database instead of two) and call `authenticate` only when
 * that query cannot tell a bad key from an empty page.
 */
import type { FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import type { Schema } from "../storage/schema.js";
import { findKeyByHash } from "../tenants/tenant.repository.js";
import { ApiError } from "./errors.js";
import { hashKey, isWellFormedKey, type Scope } from "./keys.js";

export interface Principal {
  tenantId: number;
  keyId: string;
}

const CHALLENGE = 'Bearer realm="cribline"';

function unauthorized(detail: string, invalidToken: boolean): ApiError {
  const challenge = invalidToken ? `${CHALLENGE}, error="invalid_token"` : CHALLENGE;
  return new ApiError("unauthorized", detail, {}, { "www-authenticate": challenge });
}

/** The hash of the request's key when the key is well formed, or 401: no database involved. */
function presentedKeyHash(request: FastifyRequest): string {
  const header = request.headers.authorization;
  if (header === undefined || header === "") {
    throw unauthorized("missing API key: send the header Authorization: Bearer <API key>", false);
  }
  const match = /^Bearer +(\S+) *$/i.exec(header);
  if (match === null) throw unauthorized("the Authorization header must be: Bearer <API key>", true);
  const key = match[1]!;
  if (!isWellFormedKey(key)) throw unauthorized("the API key is malformed", true);
  return hashKey(key);
}

/** Resolves the request's key to its tenant, or throws 401 / 403. */
export async function authenticate(db: Kysely<Schema>, request: FastifyRequest, scope: Scope): Promise<Principal> {
  const found = await findKeyByHash(db, request.keyHash ?? presentedKeyHash(request));
  if (found === undefined || found.revokedAt !== null) throw unauthorized("the API key is unknown or revoked", true);
  if (!found.scopes.includes(scope)) {
    throw new ApiError("forbidden", `this API key lacks the "${scope}" scope that this endpoint needs`);
  }
  return { tenantId: found.tenantId, keyId: found.keyId };
}

declare module "fastify" {
  interface FastifyRequest {
    /** The key's tenant, set by `requireScope` before the body is read. */
    principal?: Principal;
    /** The hash of a well-formed key, set by `requireWellFormedKey`. */
    keyHash?: string;
  }
}

/** An onRequest hook: runs before the body is read, so a request without a key costs little. */
export function requireScope(db: Kysely<Schema>, scope: Scope) {
  return async (request: FastifyRequest): Promise<void> => {
    request.principal = await authenticate(db, request, scope);
  };
}

/**
 * An onRequest hook for a route whose own query resolves the key (the lists, see
 * lists/list.service.ts): refuses a missing or malformed key, and leaves the look-up, with
 * its 401 and 403, to the route.
 */
export async function requireWellFormedKey(request: FastifyRequest): Promise<void> {
  request.keyHash = presentedKeyHash(request);
}

/** The key hash that `requireWellFormedKey` set on a route that declared it. */
export function keyHashOf(request: FastifyRequest): string {
  if (request.keyHash === undefined) throw new Error("route has no requireWellFormedKey hook");
  return request.keyHash;
}

/** The principal that `requireScope` set on a route that declared it. */
export function principalOf(request: FastifyRequest): Principal {
  if (request.principal === undefined) throw new Error("route has no requireScope hook");
  return request.principal;
}
