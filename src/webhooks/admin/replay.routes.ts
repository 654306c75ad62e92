/** Replays: one delivery, or the failed deliveries of a time range. */
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import type { FastifyInstance } from "fastify";
import { problemResponses } from "../../platform/problem.js";
import { principalOf } from "../../tenants/auth.hooks.js";
import { replayOne, replayRange } from "./replay.service.js";
import { ADMIN, BY_ID, DOCS, knownIds, type WebhookAdminDeps } from "./webhook.api.js";
import { DeliveryParams, IdParams, Replayed, ReplayBody } from "./webhook.schema.js";

const DISABLED: [number, string] = [409, "The endpoint is disabled: enable it first."];

export function registerReplayRoutes(fastify: FastifyInstance, { db, clock }: WebhookAdminDeps): void {
  const app = fastify.withTypeProvider<TypeBoxTypeProvider>();
  app.post(
    `${BY_ID}/deliveries/:deliveryId/replay`,
    {
      ...ADMIN,
      preHandler: knownIds,
      schema: {
        tags: DOCS.tags,
        operationId: "replayWebhookDelivery",
        summary: "Replay one delivery",
        description:
          "Sends the event again to the endpoint, with the same `webhook-id`, from the start of the retry schedule, whatever became of it before. Takes no body. A delivery that ended longer ago than the retention period (`CRIBLINE_WEBHOOK_RETENTION_DAYS`, 30 days by default) is deleted: 404.",
        security: DOCS.security,
        params: DeliveryParams,
        response: { 202: Replayed, ...problemResponses(400, 401, 403, 404, DISABLED) },
      },
    },
    async (request, reply) => {
      const { id, deliveryId } = request.params;
      const replayed = await replayOne(db, principalOf(request).tenantId, id, deliveryId, request.body, clock());
      return reply.code(202).send({ replayed });
    },
  );

  app.post(
    `${BY_ID}/replay`,
    {
      ...ADMIN,
      preHandler: knownIds,
      schema: {
        tags: DOCS.tags,
        operationId: "replayWebhookDeliveries",
        summary: "Replay the failed deliveries of a time range",
        description:
          "Sends every failed delivery of the endpoint whose event was written from `since` to `until` (inclusive) again, each with its own `webhook-id`, from the start of the retry schedule. Deliveries that ended longer ago than the retention period (30 days by default) are deleted and not replayed.",
        security: DOCS.security,
        params: IdParams,
        body: ReplayBody,
        response: { 202: Replayed, ...problemResponses(400, 401, 403, 404, DISABLED, 415) },
      },
    },
    async (request, reply) => {
      const replayed = await replayRange(db, principalOf(request).tenantId, request.params.id, request.body, clock());
      return reply.code(202).send({ replayed });
    },
  );
}
