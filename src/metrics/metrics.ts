/**
 * cribline's Prometheus metrics, in prom-client's global registry: one per process, which
 * the primary of `serve --workers` gathers from its workers for one scrape (metrics.server.ts).
 * Counting is a few increments per request; nothing here touches the database but the
 * webhook backlog, read when a scrape asks for it.
 */
import cluster from "node:cluster";
import client from "prom-client";

const registry = client.register;

/** Latency buckets, in seconds: a page takes a millisecond or two, a slow sync batch a second. */
const SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

export const httpRequests = new client.Counter({
  name: "cribline_http_requests_total",
  help: "HTTP requests answered, by route template, method and status.",
  labelNames: ["route", "method", "status"] as const,
});

export const httpDuration = new client.Histogram({
  name: "cribline_http_request_duration_seconds",
  help: "Time from a request's arrival to its answer, by route template and method.",
  labelNames: ["route", "method"] as const,
  buckets: SECONDS,
});

export const listPages = new client.Counter({
  name: "cribline_list_pages_total",
  help: "List pages served (the events' too), by list and by the kinds of filter the page had (none, name, code, relation, window, type, or several joined by +).",
  labelNames: ["list", "filter"] as const,
});

export const syncBatches = new client.Counter({
  name: "cribline_sync_batches_total",
  help: "Sync batches, by collection and outcome (applied, refused).",
  labelNames: ["collection", "outcome"] as const,
});

export const syncRecords = new client.Counter({
  name: "cribline_sync_records_total",
  help: "Records sent by sync, by collection and outcome (created, updated, unchanged, refused).",
  labelNames: ["collection", "outcome"] as const,
});

export const webhookAttempts = new client.Counter({
  name: "cribline_webhook_attempts_total",
  help: "Webhook delivery attempts recorded, by outcome (succeeded: a 2xx; failed).",
  labelNames: ["outcome"] as const,
});

export const webhookAttemptDuration = new client.Histogram({
  name: "cribline_webhook_attempt_duration_seconds",
  help: "How long an endpoint took to answer an attempt (or until it failed).",
  buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
});

export interface Backlog {
  pending: number;
  /** Milliseconds since the epoch when the oldest pending delivery was made; null when none is pending. */
  oldestCreatedAt: number | null;
}

/** What scrapes read from elsewhere: the webhook backlog (the database) and the connection pool (PostgreSQL). */
export interface MetricSources {
  backlog(): Promise<Backlog>;
  pool(): { inUse: number; idle: number; waiting: number } | undefined;
}

let sources: MetricSources | undefined;

/** Pending deliveries are counted up to this many, so that a scrape's read stays bounded whatever the backlog. */
export const BACKLOG_COUNT_LIMIT = 100_000;
let enabled = false;

/** Counts from now on (metrics.hooks.ts); until then the counting helpers below do nothing. */
export function enableMetrics(): void {
  if (enabled) return;
  enabled = true;
  collectProcessMetrics();
  // A worker of `serve --workers` answers its primary's requests for its metrics.
  if (cluster.isWorker) new client.AggregatorRegistry();
}

/** A sync batch applied: its records by outcome. */
export function countSyncApplied(collection: string, created: number, updated: number, unchanged: number): void {
  if (!enabled) return;
  syncBatches.inc({ collection, outcome: "applied" });
  syncRecords.inc({ collection, outcome: "created" }, created);
  syncRecords.inc({ collection, outcome: "updated" }, updated);
  syncRecords.inc({ collection, outcome: "unchanged" }, unchanged);
}

/** A sync batch refused (invalid, or a conflict): its records, as many as it sent. */
export function countSyncRefused(collection: string, records: number): void {
  if (!enabled) return;
  syncBatches.inc({ collection, outcome: "refused" });
  syncRecords.inc({ collection, outcome: "refused" }, records);
}

/** Webhook attempts recorded: each one's outcome and how long it took. */
export function countAttempts(attempts: readonly { succeeded: boolean; durationMs: number }[]): void {
  if (!enabled) return;
  for (const { succeeded, durationMs } of attempts) {
    webhookAttempts.inc({ outcome: succeeded ? "succeeded" : "failed" });
    webhookAttemptDuration.observe(durationMs / 1000);
  }
}

/** Where this process's scrapes read the backlog and the pool from; the last app built wins. */
export function useMetricSources(given: MetricSources | undefined): void {
  sources = given;
}

/** One read of the backlog per scrape, shared by the two gauges that show it (a scrape collects them at once). */
let backlogRead: { at: number; read: Promise<Backlog | undefined> } | undefined;
function currentBacklog(): Promise<Backlog | undefined> {
  if (backlogRead === undefined || Date.now() - backlogRead.at > 1000) {
    backlogRead = { at: Date.now(), read: sources?.backlog() ?? Promise.resolve(undefined) };
  }
  return backlogRead.read;
}

// Registered before the backlog's gauges: a scrape collects in this order, and the backlog's
// query, once started, waits in the pool for a tick, which this gauge would count as waiting.
new client.Gauge({
  name: "cribline_db_pool_connections",
  help: "PostgreSQL connections of this process's pool, by state (in_use, idle, waiting: requests waiting for one).",
  labelNames: ["state"] as const,
  collect() {
    const pool = sources?.pool();
    if (pool === undefined) return;
    this.set({ state: "in_use" }, pool.inUse);
    this.set({ state: "idle" }, pool.idle);
    this.set({ state: "waiting" }, pool.waiting);
  },
});

// Every process reads the same backlog from the database: the primary keeps the largest, not the sum.
new client.Gauge({
  name: "cribline_webhook_deliveries_pending",
  help: `Webhook deliveries waiting to be sent (due or waiting to retry), across tenants; counted up to ${BACKLOG_COUNT_LIMIT}.`,
  aggregator: "max",
  async collect() {
    const backlog = await currentBacklog();
    if (backlog !== undefined) this.set(backlog.pending);
  },
});

new client.Gauge({
  name: "cribline_webhook_oldest_pending_age_seconds",
  help: "Age of the oldest webhook delivery still pending (0 when none is): how far delivery lags.",
  aggregator: "max",
  async collect() {
    const backlog = await currentBacklog();
    if (backlog !== undefined) this.set(backlog.oldestCreatedAt === null ? 0 : Math.max(0, (Date.now() - backlog.oldestCreatedAt) / 1000));
  },
});

let defaults = false;
/** Node.js process metrics (CPU, memory, event loop lag, ...), once per process. */
function collectProcessMetrics(): void {
  if (defaults) return;
  defaults = true;
  client.collectDefaultMetrics({ register: registry });
}

export const METRICS_CONTENT_TYPE = registry.contentType;

/** This process's metrics, in Prometheus text format. */
export function metricsText(): Promise<string> {
  return registry.metrics();
}
