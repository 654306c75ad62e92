/**
 * Bearer API keys on the routes that declare a scope (`config: { scope }`). A key of the wrong
 * shape or checksum is refused without a database look-up; every other key is looked up by
 * hash on every request, so a revocation takes effect on the next request in every process.
 * The lists declare `keyInQuery`: they look the key up inside their page query (one round trip
 * instead of two), so their hook checks the key's form only, and the route calls
 * `authenticate` when that query cannot tell a bad key from an empty page.
 */
import type { FastifyInstance, FastifyRequest, onRequestHookHandler } from "fastify";
import type { Kysely } from "kysely";
import { ApiError } from "../platform/errors.js";
import { hashKey, isWellFormedKey } from "../platform/keys.js";
import type { RouteScope } from "../platform/route-book.js";
import { formatTime } from "../platform/time.js";
import type { Schema } from "../storage/schema.js";
import { findKeyByHash } from "./tenant.repository.js";

export interface Principal {
  tenantId: number;
  keyId: string;
  /** The key's hash, by which its use is recorded (key-usage.ts). */
  keyHash: string;
}

declare module "fastify" {
  interface FastifyRequest {
    /** The key's tenant, set before the body is read on a route that declares a scope. */
    principal: Principal | null;
    /** The hash of a well-formed key, set on a route that declares `keyInQuery`. */
    keyHash: string | null;
  }
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
  const key = /^Bearer +(\S+) *$/i.exec(header)?.[1];
  if (key === undefined) throw unauthorized("the Authorization header must be: Bearer <API key>", true);
  if (!isWellFormedKey(key)) throw unauthorized("the API key is malformed", true);
  // The rate limits' hook (rate-limit.hooks.ts) has hashed it already.
  return request.limitedKeyHash ?? hashKey(key);
}

/** Resolves the request's key to its tenant, or throws 401 / 403 (`key`: any valid key will do). */
export async function authenticate(db: Kysely<Schema>, request: FastifyRequest, scope: RouteScope): Promise<Principal> {
  const keyHash = request.keyHash ?? presentedKeyHash(request);
  const found = await findKeyByHash(db, keyHash);
  if (found === undefined || found.revokedAt !== null) throw unauthorized("the API key is unknown or revoked", true);
  if (found.expiresAt !== null && found.expiresAt <= Date.now()) {
    throw unauthorized(`the API key expired at ${formatTime(found.expiresAt)}`, true);
  }
  if (scope !== "key" && !found.scopes.includes(scope)) {
    throw new ApiError("forbidden", `this API key lacks the "${scope}" scope that this endpoint needs`);
  }
  return { tenantId: found.tenantId, keyId: found.keyId, keyHash };
}

/**
 * Gives every route registered from now on that declares a scope its key check, as an
 * onRequest hook after the route's own: it runs before the body is read, so a request
 * without a key costs little.
 */
export function installAuth(app: FastifyInstance, db: Kysely<Schema>): void {
  app.decorateRequest("principal", null);
  app.decorateRequest("keyHash", null);
  app.addHook("onRoute", (route) => {
    const scope = route.config?.scope;
    if (scope === undefined) return;
    const check: onRequestHookHandler =
      route.config?.keyInQuery === true
        ? async (request) => {
            request.keyHash = presentedKeyHash(request);
          }
        : async (request) => {
            request.principal = await authenticate(db, request, scope);
          };
    route.onRequest = [...[route.onRequest ?? []].flat(), check];
  });
}

/** The key hash that the hook of a `keyInQuery` route set. */
export function keyHashOf(request: FastifyRequest): string {
  if (request.keyHash === null) throw new Error("route does not declare keyInQuery");
  return request.keyHash;
}

/** The principal that the hook of a route with a scope set. */
export function principalOf(request: FastifyRequest): Principal {
  if (request.principal === null) throw new Error("route declares no scope");
  return request.principal;
}
