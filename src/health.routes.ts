/** Liveness and readiness, without a key. */
import type { FastifyInstance } from "fastify";
import { ApiError } from "./platform/errors.js";

export function registerHealthRoutes(app: FastifyInstance, database: { ping(): Promise<void> }): void {
  app.get("/healthz", { schema: { operationId: "getHealth", tags: ["Operations"], summary: "The process is alive" } }, async () => ({
    status: "ok",
  }));
  app.get(
    "/readyz",
    { schema: { operationId: "getReadiness", tags: ["Operations"], summary: "The database answers" } },
    async (request) => {
      try {
        await database.ping();
      } catch (err) {
        request.log.warn({ err }, "database not reachable");
        throw new ApiError("service_unavailable", "the database is not reachable", {}, { "retry-after": "1" });
      }
      return { status: "ready" };
    },
  );
}
