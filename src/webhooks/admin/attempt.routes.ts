/** /v1/webhook-endpoints/{id}/attempts: an endpoint's attempt log. */
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { pageSchemaOf } from "../../platform/pager.js";
import { problemResponses } from "../../platform/problem.js";
import { rawQuery } from "../../platform/query-string.js";
import { principalOf } from "../../tenants/auth.hooks.js";
import { attemptQuerySchema, attemptsPage } from "./attempt.service.js";
import { ADMIN, BY_ID, DOCS, knownIds, type WebhookAdminDeps } from "./webhook.api.js";
import { toAttempt } from "./webhook.mapper.js";
import { IdParams } from "./webhook.schema.js";

export function registerAttemptRoutes(fastify: FastifyInstance, { db, cursors }: WebhookAdminDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.get(
    `${BY_ID}/attempts`,
    {
      ...ADMIN,
      preHandler: knownIds,
      schema: {
        tags: DOCS.tags,
        operationId: "listWebhookAttempts",
        summary: "List an endpoint's delivery attempts",
        description:
          "Every attempt to send an event to the endpoint within the retention period (`CRIBLINE_WEBHOOK_RETENTION_DAYS`, 30 days by default), newest first by `attemptedAt` (ties by `id`, descending); `status` and `attemptedSince`/`attemptedUntil` keep some of them.",
        security: DOCS.security,
        params: IdParams,
        querystring: attemptQuerySchema(),
        response: { 200: pageSchemaOf("WebhookAttempt"), ...problemResponses(400, 401, 403, 404) },
      },
    },
    async (request) => {
      const page = await attemptsPage(db, cursors, principalOf(request).tenantId, request.params.id, rawQuery(request.url));
      return { data: page.rows.map(toAttempt), cursor: page.cursor };
    },
  );
}
