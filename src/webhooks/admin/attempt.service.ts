/**
 * An endpoint's attempt log, a page at a time, for the tenant that owns the endpoint: an
 * unknown endpoint is a 404 before the query string is read.
 */
import type { Kysely } from "kysely";
import type { CursorCodec } from "../../platform/cursor.js";
import { readPage, type Page } from "../../platform/pager.js";
import { parsePageRequest } from "../../platform/query-string.js";
import type { Schema } from "../../storage/schema.js";
import { attemptPage, type AttemptRow } from "./attempt.repository.js";
import { getEndpoint } from "./endpoint.service.js";

export async function attemptsPage(
  db: Kysely<Schema>,
  cursors: CursorCodec,
  tenantId: number,
  endpointId: string,
  queryString: string,
): Promise<Page<AttemptRow>> {
  await getEndpoint(db, tenantId, endpointId);
  const paged = {
    list: `webhook-endpoints/${endpointId}/attempts`,
    filterKey: "[]",
    positionOf: (row: AttemptRow) => ({ key: row.attempted_at, id: row.id }),
  };
  return readPage(cursors, tenantId, paged, parsePageRequest(queryString), (after, take) =>
    attemptPage(db, tenantId, endpointId, after, take),
  );
}
