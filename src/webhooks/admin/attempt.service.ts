/**
 * An endpoint's attempt log, a page at a time, for the tenant that owns the endpoint: an
 * unknown endpoint is a 404 before the query string is read.
 */
import type { Kysely } from "kysely";
import type { CursorCodec } from "../../platform/cursor.js";
import { readPage, type Page } from "../../platform/pager.js";
import { Type } from "@sinclair/typebox";
import {
  filterKeyOf,
  PAGE_PARAMS,
  pageRequestOf,
  parseParams,
  querySchemaOf,
  timeParam,
  timeWindowOf,
  type Param,
} from "../../platform/query-string.js";
import type { Schema } from "../../storage/schema.js";
import { attemptPage, type AttemptFilters, type AttemptRow } from "./attempt.repository.js";
import { getEndpoint } from "./endpoint.service.js";

const STATUS: Param = {
  schema: Type.String({
    enum: ["succeeded", "failed"],
    description: "Only attempts answered with a 2xx (`succeeded`), or the others (`failed`).",
  }),
  error: "invalid_parameter",
  parse: (raw) => (raw === "succeeded" || raw === "failed" ? raw : undefined),
  expects: "succeeded or failed",
};
const WHEN = timeParam("Inclusive; matches the attempt's `attemptedAt`.");
const ATTEMPT_PARAMS = { ...PAGE_PARAMS, status: STATUS, attemptedSince: WHEN, attemptedUntil: WHEN };

export const attemptQuerySchema = () => querySchemaOf(ATTEMPT_PARAMS);

export async function attemptsPage(
  db: Kysely<Schema>,
  cursors: CursorCodec,
  tenantId: number,
  endpointId: string,
  queryString: string,
): Promise<Page<AttemptRow>> {
  await getEndpoint(db, tenantId, endpointId);
  const { values, texts } = parseParams(queryString, ATTEMPT_PARAMS);
  const window = timeWindowOf(values, ["attemptedSince", "attemptedUntil"]);
  const filters: AttemptFilters = { status: values.get("status") as AttemptFilters["status"], ...window };
  const paged = {
    list: `webhook-endpoints/${endpointId}/attempts`,
    filterKey: filterKeyOf(texts),
    positionOf: (row: AttemptRow) => ({ key: row.attempted_at, id: row.id }),
  };
  return readPage(cursors, tenantId, paged, pageRequestOf(values), (after, take) =>
    attemptPage(db, tenantId, endpointId, filters, after, take),
  );
}
