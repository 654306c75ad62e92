/**
 * The metrics listener: `GET /metrics` in Prometheus text format, on an address and port of
 * its own (CRIBLINE_METRICS_PORT), never the API's, so it is not exposed with the API by
 * accident. It answers nothing else. Under `serve --workers N` the primary listens and asks
 * every worker for its metrics (prom-client's AggregatorRegistry), so one scrape covers the
 * whole process tree.
 */
import { createServer, type Server } from "node:http";
import client from "prom-client";
import { listenError, type Config } from "../platform/config.js";
import { METRICS_CONTENT_TYPE, metricsText } from "./metrics.js";

export interface MetricsListener {
  url: string;
  close(): Promise<void>;
}

function problem(status: number, title: string, detail: string): string {
  return JSON.stringify({ type: "about:blank", status, title, detail, code: status === 404 ? "not_found" : "method_not_allowed" });
}

async function listen(server: Server, host: string, port: number): Promise<string> {
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  const bound = typeof address === "object" && address !== null ? address.port : port;
  return `http://${host.includes(":") ? `[${host}]` : host}:${bound}/metrics`;
}

/**
 * Serves `gather()` at /metrics on the configured host and port; an address or port it cannot
 * listen on is a ConfigError naming CRIBLINE_METRICS_HOST or CRIBLINE_METRICS_PORT.
 */
export async function listenMetrics(
  { host, port }: NonNullable<Config["metrics"]>,
  gather: () => Promise<string> = metricsText,
): Promise<MetricsListener> {
  const server = createServer((request, response) => {
    const path = (request.url ?? "").split("?")[0];
    if (path !== "/metrics") {
      response.writeHead(404, { "content-type": "application/problem+json; charset=utf-8" });
      response.end(problem(404, "Not found", "this listener serves only GET /metrics"));
      return;
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      response.writeHead(405, { "content-type": "application/problem+json; charset=utf-8", allow: "GET, HEAD" });
      response.end(problem(405, "Method not allowed", "/metrics allows GET, HEAD"));
      return;
    }
    gather().then(
      (text) => {
        response.writeHead(200, { "content-type": METRICS_CONTENT_TYPE });
        response.end(request.method === "HEAD" ? undefined : text);
      },
      (error: unknown) => {
        response.writeHead(503, { "content-type": "text/plain; charset=utf-8" });
        response.end(`metrics unavailable: ${error instanceof Error ? error.message : String(error)}\n`);
      },
    );
  });
  const where = { host, port, hostSetting: "CRIBLINE_METRICS_HOST", portSetting: "CRIBLINE_METRICS_PORT" };
  const url = await listen(server, host, port).catch((error: unknown) => Promise.reject(listenError(error, where)));
  return { url, close: () => new Promise((resolve) => server.close(() => resolve())) };
}

/** The primary's gatherer under `serve --workers`: every worker's metrics, aggregated. */
export function clusterGatherer(): () => Promise<string> {
  const aggregator = new client.AggregatorRegistry();
  return () => aggregator.clusterMetrics();
}
