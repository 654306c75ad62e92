/**
 * The webhook admin API, for keys with the `admin` scope: endpoints (endpoint.routes.ts), each
 * endpoint's attempt log (attempt.routes.ts) and replays (replay.routes.ts). Its lists follow
 * the conventions of every list: newest first, `limit` and a signed `cursor`, strict
 * parameters, `cursor: null` on the last page.
 */
import type { FastifyInstance } from "fastify";
import { registerAttemptRoutes } from "./attempt.routes.js";
import { registerEndpointRoutes } from "./endpoint.routes.js";
import { registerReplayRoutes } from "./replay.routes.js";
import type { WebhookAdminDeps } from "./webhook.api.js";
import { WEBHOOK_SCHEMAS } from "./webhook.schema.js";

export function registerWebhookRoutes(app: FastifyInstance, deps: WebhookAdminDeps): void {
  for (const schema of WEBHOOK_SCHEMAS) app.addSchema(schema);
  registerEndpointRoutes(app, deps);
  registerAttemptRoutes(app, deps);
  registerReplayRoutes(app, deps);
}
