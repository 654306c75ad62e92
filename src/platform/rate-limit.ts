/**
 * Counting requests against limits, per bucket (a key's hash, or a client address), in fixed
 * windows, with rate-limiter-flexible on the store the deployment has:
 * - Redis (CRIBLINE_REDIS_URL): one count for every process on every machine. While Redis is
 *   unreachable, each process counts on its own (rate-limiter-flexible's insurance limiter),
 *   so requests are still served and still limited, per process; the log says so once when
 *   Redis goes and once when it is back.
 * - No Redis, `serve --workers N`: the workers of one machine share one count, kept by the
 *   primary process (RateLimiterClusterMaster, started in workers.ts).
 * - No Redis, one process: that process's memory.
 */
import cluster from "node:cluster";
import { Redis } from "ioredis";
import { RateLimiterCluster, RateLimiterMemory, RateLimiterRedis, RateLimiterRes, type RateLimiterAbstract } from "rate-limiter-flexible";

/** What is counted apart: a key's reads (every request but a sync), its syncs, and requests without a usable key, by address. */
export type Policy = "read" | "sync" | "anonymous";

export interface RateLimitSettings {
  /** Requests a window allows a key, by default (a tenant may have its own). */
  readonly read: number;
  readonly sync: number;
  /** Requests a window allows a client address that sends no usable key, or a key refused with 401. */
  readonly anonymous: number;
  readonly windowSeconds: number;
  /** Shared store; undefined: counts per process, or per machine under `serve --workers`. */
  readonly redisUrl: string | undefined;
}

/** Where a bucket stands after a request was counted (or looked at). */
export interface Standing {
  policy: Policy;
  quota: number;
  /** Requests left in this window. */
  remaining: number;
  /** Whole seconds until the window ends and the quota is whole again (at least 1). */
  resetSeconds: number;
  /** The request is over the limit. */
  limited: boolean;
}

export interface RateStore {
  /** Counts one request in the bucket. */
  take(policy: Policy, bucket: string, quota: number): Promise<Standing>;
  /** Where the bucket stands, counting nothing. */
  peek(policy: Policy, bucket: string, quota: number): Promise<Standing>;
  readonly windowSeconds: number;
  /** What holds, for the start-up log: "redis", "machine" or "process". */
  readonly scope: "redis" | "machine" | "process";
  close(): Promise<void>;
}

export class RedisUnreachableError extends Error {
  override name = "RedisUnreachableError";
}

const KEY_PREFIX = "cribline-rl";
/** Clients being closed on purpose: their connection's end is no outage. */
const closing = new WeakSet<Redis>();

function standing(policy: Policy, quota: number, res: RateLimiterRes | null, windowSeconds: number, limited: boolean): Standing {
  const consumed = res?.consumedPoints ?? 0;
  const ms = res?.msBeforeNext ?? windowSeconds * 1000;
  return { policy, quota, remaining: Math.max(0, quota - consumed), resetSeconds: Math.max(1, Math.ceil(ms / 1000)), limited };
}

/** The Redis at `url`, connected, or a RedisUnreachableError naming it. */
async function connectRedis(url: string, log: StoreLog): Promise<Redis> {
  const shown = new URL(url);
  shown.password = shown.password === "" ? "" : "***";
  const client = new Redis(url, {
    lazyConnect: true,
    // Commands fail at once while the connection is down, and the insurance limiter counts instead.
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 3000,
    retryStrategy: (times) => Math.min(times * 200, 2000),
  });
  let down = false;
  let connected = false;
  const lost = (why: string) => {
    if (down || !connected || closing.has(client)) return;
    down = true;
    log.warn(`rate limits: Redis at ${shown.host} is unreachable (${why}); each process counts on its own until it is back`);
  };
  client.on("error", (error: Error) => lost(error.message));
  client.on("close", () => lost("connection closed"));
  client.on("ready", () => {
    connected = true;
    if (!down) return;
    down = false;
    log.info(`rate limits: Redis at ${shown.host} is back; counts are shared again`);
  });
  try {
    await client.connect();
    await client.ping();
  } catch (error) {
    client.disconnect();
    throw new RedisUnreachableError(
      `CRIBLINE_REDIS_URL: cannot reach Redis at ${shown.host} (${error instanceof Error ? error.message : String(error)})`,
    );
  }
  return client;
}

export interface StoreLog {
  warn(message: string): void;
  info(message: string): void;
}

/** The store the settings name (see above). */
export async function openRateStore(settings: RateLimitSettings, log: StoreLog): Promise<RateStore> {
  const duration = settings.windowSeconds;
  let redis: Redis | undefined;
  let scope: RateStore["scope"];
  let make: (keyPrefix: string, points: number) => RateLimiterAbstract;
  if (settings.redisUrl !== undefined) {
    const client = await connectRedis(settings.redisUrl, log);
    redis = client;
    scope = "redis";
    make = (keyPrefix, points) =>
      new RateLimiterRedis({
        storeClient: client,
        keyPrefix,
        points,
        duration,
        rejectIfRedisNotReady: true,
        insuranceLimiter: new RateLimiterMemory({ keyPrefix, points, duration }),
      });
  } else if (cluster.isWorker) {
    scope = "machine";
    make = (keyPrefix, points) =>
      new RateLimiterCluster({
        keyPrefix,
        points,
        duration,
        timeoutMs: 1000,
        insuranceLimiter: new RateLimiterMemory({ keyPrefix, points, duration }),
      });
  } else {
    scope = "process";
    make = (keyPrefix, points) => new RateLimiterMemory({ keyPrefix, points, duration });
  }
  // One limiter per policy and quota: a tenant's own limit is a limiter of its own.
  const limiters = new Map<string, RateLimiterAbstract>();
  const limiter = (policy: Policy, quota: number) => {
    const prefix = `${KEY_PREFIX}:${policy}:${quota}:${duration}`;
    let found = limiters.get(prefix);
    if (found === undefined) {
      found = make(prefix, quota);
      limiters.set(prefix, found);
    }
    return found;
  };
  return {
    windowSeconds: duration,
    scope,
    async take(policy, bucket, quota) {
      try {
        return standing(policy, quota, await limiter(policy, quota).consume(bucket), duration, false);
      } catch (rejection) {
        if (rejection instanceof RateLimiterRes) return standing(policy, quota, rejection, duration, true);
        throw rejection;
      }
    },
    async peek(policy, bucket, quota) {
      const res = await limiter(policy, quota).get(bucket);
      return standing(policy, quota, res, duration, (res?.consumedPoints ?? 0) >= quota);
    },
    async close() {
      if (redis === undefined) return;
      closing.add(redis);
      await redis.quit().catch(() => redis?.disconnect());
    },
  };
}
