/**
 * Statements over many rows of values (`(a, b) in ((..), (..))`, `values (..), (..)`), built
 * from a template of their shape and row count (see query-template.ts): building a few hundred
 * rows of `sql` fragments on every call would cost more than the statement.
 */
import { sql, type Kysely, type RawBuilder, type SqlBool } from "kysely";
import { QueryTemplates, type SlotValue } from "./query-template.js";
import type { Schema } from "./schema.js";

/** `(a, b, …) in ((…, …, …), …)`: the columns' values are one of the given rows. */
export function keysIn(columns: readonly string[], rows: readonly (readonly unknown[])[]): RawBuilder<SqlBool> {
  const values = sql.join(rows.map((row) => sql`(${sql.join(row)})`));
  return sql<SqlBool>`(${sql.join(columns.map((c) => sql.ref(c)))}) in (${values})`;
}

const rowQueries = new QueryTemplates<unknown>();

/**
 * Runs the statement `build` makes over `rows` (each of the same width, at least one): `build`
 * gets a slot for each value, row by row, and is called once per shape and row count.
 */
export async function overRows<R>(
  db: Kysely<Schema>,
  shape: string,
  rows: readonly (readonly unknown[])[],
  build: (slots: SlotValue[][]) => RawBuilder<R>,
): Promise<R[]> {
  const width = rows[0]?.length ?? 0;
  const query = rowQueries.fill(db, `${shape}:${rows.length}`, rows.flat(), (s) => {
    const built = build(rows.map((_, r) => Array.from({ length: width }, (_, c) => s[r * width + c])));
    return { compile: () => built.compile(db) };
  });
  return (await db.executeQuery(query)).rows as R[];
}
