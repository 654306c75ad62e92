/**
 * What the API counts for Prometheus when metrics are on (CRIBLINE_METRICS_PORT): every
 * request by route template, method and status with its latency, and every list page (the
 * events' too) by list and kind of filter. Sync and webhook deliveries count where they happen (metrics.ts).
 */
import type { FastifyInstance } from "fastify";
import { sql } from "kysely";
import type { Storage } from "../storage/storage.js";
import { BACKLOG_COUNT_LIMIT, enableMetrics, httpDuration, httpRequests, listPages, useMetricSources, type Backlog } from "./metrics.js";

const FILTER_KINDS: Record<string, string> = {
  name: "name",
  code: "code",
  employeeId: "relation",
  productId: "relation",
  costCenterId: "relation",
  sectorId: "relation",
  createdSince: "window",
  createdUntil: "window",
  type: "type",
};

/** The kinds of filter a list page's query string has: "none", or e.g. "name+window". */
export function filterKind(url: string): string {
  const query = url.includes("?") ? url.slice(url.indexOf("?") + 1) : "";
  const kinds = new Set<string>();
  for (const part of query.split("&")) {
    const kind = FILTER_KINDS[part.slice(0, part.indexOf("=") === -1 ? part.length : part.indexOf("="))];
    if (kind !== undefined) kinds.add(kind);
  }
  return kinds.size === 0 ? "none" : [...kinds].sort().join("+");
}

async function backlog(storage: Storage): Promise<Backlog> {
  const { rows } = await sql<{ n: number | string; oldest: number | string | null }>`
    select count(*) as n, min(created_at) as oldest from (
      select created_at from webhook_deliveries where status = 'pending' limit ${sql.lit(BACKLOG_COUNT_LIMIT)}
    ) as pending`.execute(storage.db);
  const row = rows[0];
  return { pending: Number(row?.n ?? 0), oldestCreatedAt: row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest) };
}

export function installMetrics(app: FastifyInstance, storage: Storage): void {
  enableMetrics();
  useMetricSources({ backlog: () => backlog(storage), pool: () => storage.poolState?.() });
  app.addHook("onResponse", async (request, reply) => {
    const route = request.routeOptions.url ?? "unmatched";
    const method = request.method;
    httpRequests.inc({ route, method, status: reply.statusCode });
    httpDuration.observe({ route, method }, reply.elapsedTime / 1000);
    // The lists (the record lists and the events) are the routes that find their key in their page query.
    if (request.routeOptions.config?.keyInQuery === true && reply.statusCode === 200) {
      listPages.inc({ list: route.slice("/v1/".length), filter: filterKind(request.url) });
    }
  });
}
