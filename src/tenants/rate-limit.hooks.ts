/**
 * Rate limits on every request but the reference page's (/docs), counted before any database work where the request gives
 * no usable key: a request with a well-formed key is counted against that key (its syncs apart
 * from everything else it asks), any other against the client's address, and so is a key that
 * turns out to be refused (401), so that guessing keys costs the guesser's own budget. Every
 * such answer says where its bucket stands, in the RateLimit-Policy and RateLimit fields of the
 * IETF httpapi draft (draft-ietf-httpapi-ratelimit-headers); over the limit it is a 429 with
 * Retry-After.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Kysely } from "kysely";
import { ApiError } from "../platform/errors.js";
import { headerCount } from "../platform/headers.js";
import { hashKey, isWellFormedKey } from "../platform/keys.js";
import type { Policy, RateLimitSettings, RateStore, Standing } from "../platform/rate-limit.js";
import type { Schema } from "../storage/schema.js";
import { findKeyByHash } from "./tenant.repository.js";

/** How long a tenant's own limits are kept in memory before they are read again. */
const TENANT_LIMITS_TTL_MS = 30_000;
const MAX_CACHED_KEYS = 10_000;

declare module "fastify" {
  interface FastifyRequest {
    /** The well-formed key's hash counted for this request, if any: a 401 for it counts against the address too. */
    limitedKeyHash: string | null;
  }
}

/**
 * The hash of the request's key when it has cribline's form; undefined for anything else, and
 * for several Authorization headers (refused with 400, counted against the address).
 */
function wellFormedKeyHash(request: FastifyRequest): string | undefined {
  if (headerCount(request.raw, "authorization") > 1) return undefined;
  const key = /^Bearer +(\S+) *$/i.exec(request.headers.authorization ?? "")?.[1];
  return key !== undefined && isWellFormedKey(key) ? hashKey(key) : undefined;
}

function describe(standing: Standing, windowSeconds: number): { policy: string; now: string } {
  return {
    policy: `"${standing.policy}";q=${standing.quota};w=${windowSeconds}`,
    now: `"${standing.policy}";r=${standing.remaining};t=${standing.resetSeconds}`,
  };
}

function tooMany(standing: Standing, windowSeconds: number): ApiError {
  const whose = standing.policy === "anonymous" ? "this client address, without a valid API key," : "this API key";
  const what = standing.policy === "sync" ? "sync requests" : "requests";
  return new ApiError(
    "rate_limited",
    `too many ${what}: ${whose} may make ${standing.quota} every ${windowSeconds} s; retry in ${standing.resetSeconds} s`,
    {},
    { "retry-after": String(standing.resetSeconds) },
  );
}

export function installRateLimits(app: FastifyInstance, db: Kysely<Schema>, store: RateStore, settings: RateLimitSettings): void {
  const windowSeconds = store.windowSeconds;
  const tenantLimits = new Map<string, { read: number | null; sync: number | null; until: number }>();

  /** The key's tenant's own quota for the policy, read at most every TENANT_LIMITS_TTL_MS; the default when it has none. */
  async function quotaOf(keyHash: string, policy: "read" | "sync"): Promise<number> {
    let cached = tenantLimits.get(keyHash);
    if (cached === undefined || cached.until < Date.now()) {
      const row = await findKeyByHash(db, keyHash);
      if (tenantLimits.size >= MAX_CACHED_KEYS) tenantLimits.clear();
      cached = { read: row?.readLimit ?? null, sync: row?.syncLimit ?? null, until: Date.now() + TENANT_LIMITS_TTL_MS };
      tenantLimits.set(keyHash, cached);
    }
    return cached[policy] ?? settings[policy];
  }

  const answer = (reply: FastifyReply, standing: Standing) => {
    const fields = describe(standing, windowSeconds);
    reply.header("ratelimit-policy", fields.policy).header("ratelimit", fields.now);
    if (standing.limited) throw tooMany(standing, windowSeconds);
  };

  app.decorateRequest("limitedKeyHash", null);
  app.addHook("onRequest", async (request, reply) => {
    // The reference page's files aside: everything the OpenAPI document names, health checks too.
    if (/^\/docs(\/|\?|$)/.test(request.url)) return;
    const address = request.ip;
    const keyHash = request.routeOptions.config?.scope === undefined ? undefined : wellFormedKeyHash(request);
    if (keyHash === undefined) return answer(reply, await store.take("anonymous", address, settings.anonymous));
    // An address that has had too many keys refused is refused before its next key is looked up.
    const byAddress = await store.peek("anonymous", address, settings.anonymous);
    if (byAddress.limited) return answer(reply, byAddress);
    const policy: Policy = request.url.startsWith("/v1/sync/") ? "sync" : "read";
    request.limitedKeyHash = keyHash;
    answer(reply, await store.take(policy, keyHash, await quotaOf(keyHash, policy)));
  });
  app.addHook("onResponse", async (request, reply) => {
    if (reply.statusCode === 401 && request.limitedKeyHash !== null) await store.take("anonymous", request.ip, settings.anonymous);
  });
  app.addHook("onClose", async () => store.close());
}
