/**
 * Settings, parsed once at start from the environment, typed and frozen. Nothing else in
 * cribline reads `process.env`: everything receives a Config.
 */
import type { RateLimitSettings } from "./rate-limit.js";

export type DatabaseConfig =
  | { readonly engine: "sqlite"; readonly path: string }
  | { readonly engine: "postgres"; readonly url: string; readonly poolSize: number; readonly statementTimeoutMs: number };

export type LogLevel = "fatal" | "error" | "warn" | "info" | "debug" | "trace" | "silent";

export interface Config {
  readonly port: number;
  readonly host: string;
  readonly database: DatabaseConfig;
  /** Secret that signs cursors; when unset on SQLite it is generated and kept in the database. */
  readonly cursorSecret: string | undefined;
  /** Create the demo tenant on the first start of an empty database. */
  readonly demoOnFirstStart: boolean;
  readonly logLevel: LogLevel;
  /** Largest sync request body, in bytes. */
  readonly syncBodyLimit: number;
  /** Let webhooks go to loopback and private addresses (local development and tests only). */
  readonly webhooksAllowPrivate: boolean;
  /** Days the webhook log (attempts, ended deliveries) is kept; 0 keeps it for ever. */
  readonly webhookRetentionDays: number;
  /** Days events are kept and listed (GET /v1/events); 0 keeps them for ever. */
  readonly eventRetentionDays: number;
  readonly rateLimits: RateLimitSettings;
  /** Where Prometheus metrics are served (a listener of their own); undefined: no metrics. */
  readonly metrics: { readonly host: string; readonly port: number } | undefined;
}

/** The oldest time a retention setting of `days` keeps at `now`; undefined when 0 keeps everything. */
export function keptSince(days: number, now: number): number | undefined {
  return days === 0 ? undefined : now - days * 24 * 60 * 60 * 1000;
}

/** Requests per window that keep one runaway client from taking the deployment (README, "Rate limits"). */
export const RATE_LIMIT_DEFAULTS = { read: 15_000, sync: 1_000, anonymous: 5_000, windowSeconds: 10 } as const;

/**
 * Every environment variable the server reads, named here once: the functions below read a
 * setting only by one of these names (`Setting`), and setting-names.ts warns about a CRIBLINE_*
 * variable that is none of them, so a setting added here is known there too.
 */
export const SETTINGS = [
  "PORT",
  "HOST",
  "LOG_LEVEL",
  "DATABASE_URL",
  "DATABASE_POOL_SIZE",
  "DATABASE_STATEMENT_TIMEOUT_MS",
  "CRIBLINE_CURSOR_SECRET",
  "CRIBLINE_DEMO",
  "CRIBLINE_SYNC_BODY_LIMIT",
  "CRIBLINE_WEBHOOKS_ALLOW_PRIVATE",
  "CRIBLINE_RATE_LIMIT_READ",
  "CRIBLINE_RATE_LIMIT_SYNC",
  "CRIBLINE_RATE_LIMIT_ANONYMOUS",
  "CRIBLINE_RATE_LIMIT_WINDOW_SECONDS",
  "CRIBLINE_REDIS_URL",
  "CRIBLINE_METRICS_PORT",
  "CRIBLINE_METRICS_HOST",
  "CRIBLINE_WEBHOOK_RETENTION_DAYS",
  "CRIBLINE_EVENT_RETENTION_DAYS",
] as const;

export type Setting = (typeof SETTINGS)[number];

/** A setting's value; empty counts as unset, for every setting. */
function setting(env: NodeJS.ProcessEnv, key: Setting): string | undefined {
  const raw = env[key];
  return raw === "" ? undefined : raw;
}

export class ConfigError extends Error {
  override name = "ConfigError";
}

const LOG_LEVELS: readonly LogLevel[] = ["fatal", "error", "warn", "info", "debug", "trace", "silent"];

function integer(env: NodeJS.ProcessEnv, key: Setting, fallback: number, min: number, max: number): number {
  const raw = setting(env, key);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${key} must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

function flag(env: NodeJS.ProcessEnv, key: Setting, fallback: boolean): boolean {
  const raw = setting(env, key);
  if (raw === undefined) return fallback;
  if (raw === "1" || raw === "true") return true;
  if (raw === "0" || raw === "false") return false;
  throw new ConfigError(`${key} must be true or false (or 1 or 0), got "${raw}"`);
}

/**
 * 0 (keep for ever), or at least a week: a delivery retries for about three days, and its
 * attempts should outlive the retries by long enough for someone to read them.
 */
function retentionDays(env: NodeJS.ProcessEnv): number {
  const key = "CRIBLINE_WEBHOOK_RETENTION_DAYS";
  const days = integer(env, key, 30, 0, 36500);
  if (days !== 0 && days < 7) throw new ConfigError(`${key} must be 0 (keep for ever) or at least 7 days, got "${setting(env, key)}"`);
  return days;
}

export function parseDatabaseUrl(raw: string | undefined, env: NodeJS.ProcessEnv = {}): DatabaseConfig {
  // PostgreSQL's settings, checked whatever the engine: a bad value is refused on SQLite too.
  const poolSize = integer(env, "DATABASE_POOL_SIZE", 10, 1, 1000);
  const statementTimeoutMs = integer(env, "DATABASE_STATEMENT_TIMEOUT_MS", 5000, 100, 3_600_000);
  if (raw === undefined || raw === "") return { engine: "sqlite", path: "data/cribline.db" };
  if (raw.startsWith("sqlite:")) {
    const path = raw.slice("sqlite:".length).replace(/^\/\/(?=\/)/, "");
    if (path === "") throw new ConfigError("DATABASE_URL sqlite:<path> needs a path (or :memory:)");
    return { engine: "sqlite", path };
  }
  if (raw.startsWith("postgres://") || raw.startsWith("postgresql://"))
    return { engine: "postgres", url: raw, poolSize, statementTimeoutMs };
  throw new ConfigError(`DATABASE_URL must start with sqlite: or postgres://, got "${raw.split(":")[0]}:..."`);
}

function metricsListener(env: NodeJS.ProcessEnv): Config["metrics"] {
  const host = setting(env, "CRIBLINE_METRICS_HOST");
  if (setting(env, "CRIBLINE_METRICS_PORT") === undefined) {
    if (host !== undefined) {
      throw new ConfigError("CRIBLINE_METRICS_HOST needs CRIBLINE_METRICS_PORT: metrics are served only on a port of their own");
    }
    return undefined;
  }
  const port = integer(env, "CRIBLINE_METRICS_PORT", 0, 1, 65535);
  if (port === integer(env, "PORT", 3000, 0, 65535)) {
    throw new ConfigError(`CRIBLINE_METRICS_PORT must differ from PORT (${port}): metrics are never served with the API`);
  }
  return Object.freeze({ host: host ?? "127.0.0.1", port });
}

function rateLimitSettings(env: NodeJS.ProcessEnv): RateLimitSettings {
  const raw = setting(env, "CRIBLINE_REDIS_URL");
  let redisUrl: string | undefined;
  if (raw !== undefined) {
    if (!/^rediss?:\/\//.test(raw) || !URL.canParse(raw)) {
      throw new ConfigError(`CRIBLINE_REDIS_URL must be a redis:// or rediss:// URL, got "${raw.split(":")[0]}:..."`);
    }
    redisUrl = raw;
  }
  const d = RATE_LIMIT_DEFAULTS;
  return Object.freeze({
    read: integer(env, "CRIBLINE_RATE_LIMIT_READ", d.read, 1, 1_000_000_000),
    sync: integer(env, "CRIBLINE_RATE_LIMIT_SYNC", d.sync, 1, 1_000_000_000),
    anonymous: integer(env, "CRIBLINE_RATE_LIMIT_ANONYMOUS", d.anonymous, 1, 1_000_000_000),
    windowSeconds: integer(env, "CRIBLINE_RATE_LIMIT_WINDOW_SECONDS", d.windowSeconds, 1, 3600),
    redisUrl,
  });
}

export function loadConfig(env: NodeJS.ProcessEnv): Config {
  const logLevel = (setting(env, "LOG_LEVEL") ?? "info") as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got "${logLevel}"`);
  const database = parseDatabaseUrl(setting(env, "DATABASE_URL"), env);
  const cursorSecret = setting(env, "CRIBLINE_CURSOR_SECRET");
  if (cursorSecret !== undefined && cursorSecret.length < 32) {
    throw new ConfigError("CRIBLINE_CURSOR_SECRET must be at least 32 characters");
  }
  if (database.engine === "postgres" && cursorSecret === undefined) {
    throw new ConfigError("CRIBLINE_CURSOR_SECRET is required on PostgreSQL: every process must sign cursors alike");
  }
  return Object.freeze({
    port: integer(env, "PORT", 3000, 0, 65535),
    host: setting(env, "HOST") ?? "127.0.0.1",
    database: Object.freeze(database),
    cursorSecret,
    demoOnFirstStart: flag(env, "CRIBLINE_DEMO", true),
    logLevel,
    syncBodyLimit: integer(env, "CRIBLINE_SYNC_BODY_LIMIT", 4 * 1024 * 1024, 1024, 256 * 1024 * 1024),
    webhooksAllowPrivate: flag(env, "CRIBLINE_WEBHOOKS_ALLOW_PRIVATE", false),
    webhookRetentionDays: retentionDays(env),
    eventRetentionDays: integer(env, "CRIBLINE_EVENT_RETENTION_DAYS", 30, 0, 36500),
    rateLimits: rateLimitSettings(env),
    metrics: metricsListener(env),
  });
}

/**
 * An error of listening on `host`:`port`, as a ConfigError naming the settings that gave them
 * (`hostSetting`, `portSetting`) when they are the cause: an address that does not resolve or
 * is not this machine's, a port in use or not allowed. Any other error is returned as it is.
 */
export function listenError(error: unknown, where: { host: string; port: number; hostSetting: string; portSetting: string }): unknown {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  const { host, port, hostSetting, portSetting } = where;
  if (code === "ENOTFOUND" || code === "EAI_AGAIN" || code === "EADDRNOTAVAIL") {
    return new ConfigError(`${hostSetting} must be an address of this machine to listen on, got "${host}" (${code})`);
  }
  if (code === "EADDRINUSE")
    return new ConfigError(`${portSetting} ${port} is in use on ${host} (EADDRINUSE): another process listens there`);
  if (code === "EACCES") return new ConfigError(`${portSetting} ${port} may not be listened on by this user on ${host} (EACCES)`);
  return error;
}
