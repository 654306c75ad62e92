/**
 * The scale-out engine: PostgreSQL through a `pg` pool, shared by as many cribline
 * processes as the database allows. Nothing here keeps state a request relies on.
 */
import { createHash } from "node:crypto";
import pg from "pg";
import { Kysely, PostgresDialect, sql } from "kysely";
import { POSTGRES } from "./engine.js";
import { PLAN_EACH_TIME } from "./query-template.js";
import type { Storage } from "./storage.js";
import type { Schema } from "./schema.js";

export interface PostgresOptions {
  url: string;
  poolSize: number;
  statementTimeoutMs: number;
  /** Told about connections lost outside a query (the database restarting, a network cut). */
  onIdleError?: (err: Error) => void;
}

// int8 (bigint, count(*)) would arrive as strings; cribline's are milliseconds and counts,
// well inside 2^53. numeric stays a string: cribline stores none.
const INT8_OID = 20;
const types = {
  getTypeParser(oid: number, format?: "text" | "binary") {
    if (oid === INT8_OID) return (value: string) => Number(value);
    return pg.types.getTypeParser(oid, format);
  },
};

/**
 * The prepared statements a connection may hold before it is closed at its next release, and
 * the pool opens another. PostgreSQL keeps each statement's plan in the connection's backend
 * (and pg its text) for the connection's life, and a busy connection never idles out: a
 * workload repeats a few shapes, but windows of every width, limits and filters make new ones
 * without end, which grew both processes by megabytes a minute (docs/measurements.md).
 */
export const MAX_PREPARED_PER_CONNECTION = 200;

/**
 * Every query runs as a named prepared statement, so PostgreSQL parses and plans each query
 * shape once per connection instead of on every page. The name is a digest of the SQL.
 */
function preparing(client: pg.PoolClient, onError: (err: Error) => void): pg.PoolClient {
  const marked = client as pg.PoolClient & { prepared?: Set<string> };
  const prepared = marked.prepared ?? (marked.prepared = named(client, onError));
  // pg-pool gives the client a new release at each checkout; `true` closes the connection.
  const release = client.release;
  client.release = (err?: Error | boolean) => release(err ?? (prepared.size > MAX_PREPARED_PER_CONNECTION || undefined));
  return client;
}

/** Makes a new connection run its queries as named statements; the names it has prepared. */
function named(client: pg.PoolClient, onError: (err: Error) => void): Set<string> {
  const prepared = new Set<string>();
  // A connection lost while checked out fails its query (a 503) and also emits an error
  // event, which the pool listens for only while the connection is idle.
  client.on("error", onError);
  const query = client.query.bind(client) as (...args: unknown[]) => unknown;
  (client as { query: unknown }).query = (text: unknown, values?: unknown[]) => {
    const name = typeof text === "string" ? statementName(text) : undefined;
    if (name === undefined) return query(text, values);
    prepared.add(name);
    return query({ name, text, values });
  };
  return prepared;
}

function isPreparable(text: string): boolean {
  // Statements without parameters that change the session or transaction are sent as they are,
  // and so are those marked to be planned each time (sent unnamed, they are planned at every Bind).
  if (text.startsWith(PLAN_EACH_TIME)) return false;
  return !/^\s*(begin|commit|rollback|savepoint|release|start|set|create|alter|drop|lock)\b/i.test(text);
}

/** Names by text (none for what is not prepared): a hash per query cost a page a few per cent of its time. */
const statementNames = new Map<string, string | undefined>();

function statementName(text: string): string | undefined {
  let name = statementNames.get(text);
  if (name === undefined && !statementNames.has(text)) {
    name = isPreparable(text) ? `cl_${createHash("sha1").update(text).digest("base64url")}` : undefined;
    // The shapes are few (see query-template.ts); a flood of one-off texts only starts it over.
    if (statementNames.size >= 5000) statementNames.clear();
    statementNames.set(text, name);
  }
  return name;
}

export function openPostgresStorage(options: PostgresOptions): Storage {
  const pool = new pg.Pool({
    connectionString: options.url,
    max: options.poolSize,
    types,
    // One slow query cannot hold a connection for ever; PostgreSQL cancels it (57014).
    statement_timeout: options.statementTimeoutMs,
    // A request waits at most this long for a connection while the database is unreachable.
    connectionTimeoutMillis: 5000,
    idleTimeoutMillis: 30_000,
    application_name: "cribline",
    // Plans by shape, never by value: cribline's queries are index ranges whose best plan does
    // not depend on the values (test/plans.test.ts checks these generic plans), and PostgreSQL
    // otherwise re-plans the window and name pages on every request, at several times their
    // execution time (docs/measurements.md). And no sort where an index gives the order: every
    // query of cribline has an index in its order, but a table without statistics (new, or
    // autovacuum off or behind) looks small enough to read whole and sort, which a page of a
    // large table then does on every request. A sort that no index can spare stays. Which
    // makes such a plan's cost huge, and JIT compilation (for long analytic queries, never
    // cribline's) would then cost a page hundreds of milliseconds: off.
    options: "-c plan_cache_mode=force_generic_plan -c enable_sort=off -c jit=off",
  });
  // Without a listener, an idle connection dropped by the server would crash the process.
  const onError = (err: Error) => options.onIdleError?.(err);
  pool.on("error", onError);
  const preparingPool = {
    connect: async () => preparing(await pool.connect(), onError),
    end: () => pool.end(),
  };
  const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool: preparingPool as unknown as pg.Pool }) });
  return {
    db,
    engine: POSTGRES,
    async ping() {
      await sql`select 1`.execute(db);
    },
    isUnavailable,
    poolState: () => ({ inUse: pool.totalCount - pool.idleCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    async close() {
      await db.destroy();
    },
  };
}

// SQLSTATE classes and codes of a database that cannot answer now: connection exceptions,
// too many connections, a statement cancelled by statement_timeout, the server shutting down.
const UNAVAILABLE_STATES = /^(08...|53...|57014|57P0[1-5]|40001|40P01)$/;
const NETWORK_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EPIPE",
  "ENOTFOUND",
  "EAI_AGAIN",
]);

function isUnavailable(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === "string" && (UNAVAILABLE_STATES.test(code) || NETWORK_CODES.has(code))) return true;
  // The pool's and the client's own messages when no connection can be had or it dropped.
  return /timeout exceeded when trying to connect|Connection terminated|Client has encountered a connection error/i.test(error.message);
}
