/**
 * What the list query (list.repository.ts) and the time window's arms (window/statement.ts) are built
 * from: a list's orders, the columns a page reads, and the query builders' types.
 */
import type { SelectQueryBuilder } from "kysely";
import type { CursorPosition } from "../platform/cursor.js";
import type { RecordRow, Schema } from "../storage/schema.js";
import type { ListQuery } from "./list.query.js";

export type ListOrder = "created" | "name" | "code";

export const ORDERS = {
  created: { column: "created_at", direction: "desc", after: "<" },
  name: { column: "name_key", direction: "asc", after: ">" },
  code: { column: "code_key", direction: "asc", after: ">" },
} as const;

export function listOrder(query: ListQuery): ListOrder {
  if (query.name !== undefined) return "name";
  if (query.code !== undefined) return "code";
  return "created";
}

export type ListRow = Pick<RecordRow, "tenant_id" | "id" | "created_at" | "updated_at" | "name_key" | "code_key" | "body">;

export const LIST_COLUMNS = ["tenant_id", "id", "created_at", "updated_at", "name_key", "code_key", "body"] as const;

/** Position of a row in the given order, as a cursor carries it. */
export function positionOf(row: ListRow, order: ListOrder): CursorPosition {
  const key = order === "created" ? row.created_at : order === "name" ? row.name_key : row.code_key;
  return { key: key ?? "", id: row.id };
}

/** All record tables share one shape, so queries type the table as one of them. */
export type FilteredQuery = SelectQueryBuilder<Schema, "withdrawals", object>;
export type RowsQuery = SelectQueryBuilder<Schema, "withdrawals", ListRow>;
