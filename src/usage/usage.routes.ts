/**
 * /v1/usage: what each cost center, employee, product, sector or device consumed per day,
 * week or month of a time zone, read with the `read` scope and paged like every list.
 */
import { Type } from "@sinclair/typebox";
import type { FastifyInstance } from "fastify";
import type { Kysely } from "kysely";
import type { CursorCodec } from "../platform/cursor.js";
import { pageSchemaOf } from "../platform/pager.js";
import { problemResponses } from "../platform/problem.js";
import { rawQuery } from "../platform/query-string.js";
import type { Schema } from "../storage/schema.js";
import { principalOf } from "../tenants/auth.hooks.js";
import { usageQuerySchema } from "./usage.query.js";
import { nameFieldOf, USAGE_FIELD_NAMES } from "./usage.repository.js";
import { MAX_PERIODS, usagePage } from "./usage.service.js";

export interface UsageDeps {
  db: Kysely<Schema>;
  cursors: CursorCodec;
}

const Kind = (what: string) =>
  Type.Object(
    {
      count: Type.Integer({ description: `How many ${what} the period holds.` }),
      quantity: Type.Integer({ description: `Their quantities summed.` }),
    },
    { additionalProperties: false },
  );

const groupProperties = Object.fromEntries(
  USAGE_FIELD_NAMES.flatMap((field) => [
    [field, Type.Optional(Type.String({ description: `The group's \`${field}\`, when the report groups by it.` }))],
    [
      nameFieldOf(field),
      Type.Optional(
        Type.Union([Type.String(), Type.Null()], {
          description:
            field === "employeeId" || field === "productId"
              ? `The name the most recently stored transaction with this \`${field}\` carries.`
              : `The name of the master record with this id; null when there is none.`,
        }),
      ),
    ],
  ]),
);

const UsageRow = Type.Object(
  {
    period: Type.String({
      format: "date-time",
      description: "When the period starts, in the report's time zone with its offset; with `interval=total`, `createdSince`.",
    }),
    ...groupProperties,
    withdrawals: Kind("withdrawals"),
    returns: Kind("returns"),
    exchanges: Kind("exchanges (`productId` is the item handed out)"),
    netQuantity: Type.Integer({ description: "Units withdrawn minus units returned." }),
  },
  { additionalProperties: false, $id: "UsageRow", description: "What one group consumed in one period." },
);

export function registerUsageRoutes(fastify: FastifyInstance, { db, cursors }: UsageDeps): void {
  fastify.addSchema(UsageRow);
  // Untyped: the page is sent as JSON text, as the lists send theirs.
  fastify.get(
    "/v1/usage",
    {
      config: { scope: "read" },
      schema: {
        tags: ["Usage"],
        security: [{ apiKey: [] }],
        operationId: "getUsage",
        summary: "Usage report",
        description: `Withdrawals, returns and exchanges counted and their quantities summed per period and group, over a window of event dates (\`createdSince\` and \`createdUntil\`, both required, inclusive, at most ${MAX_PERIODS} periods; months with \`interval=total\`). Rows are ordered by period, then group; a group with nothing in a period has no row. The sums equal what the transaction lists return for the same window and ids.`,
        querystring: usageQuerySchema(),
        response: { 200: pageSchemaOf("UsageRow"), ...problemResponses(400, 401, 403) },
      },
    },
    async (request, reply) =>
      reply
        .type("application/json; charset=utf-8")
        .send(await usagePage(db, cursors, principalOf(request).tenantId, rawQuery(request.url))),
  );
}
