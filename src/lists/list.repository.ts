/**
 * The one list query, for every collection: tenant first (found from the reader's API key in
 * the same statement, see list.service.ts), then the filters as index ranges or equalities, then
 * a keyset condition written as a row value so that it stays an index range on both engines,
 * ordered by the sort key and id. A time window's page is built by its plan
 * (window/statement.ts). Compiled once per shape (storage/query-template.ts); each page fills
 * in its values.
 */
import type { CompiledQuery, Compilable, Kysely } from "kysely";
import { RELATIONS, type Collection } from "../collections/define.js";
import { prefixEnd, sortKey } from "../collections/sort-key.js";
import type { CursorPosition } from "../platform/cursor.js";
import { QueryTemplates, type Slots } from "../storage/query-template.js";
import type { Schema } from "../storage/schema.js";
import type { ListQuery } from "./list.query.js";
import { LIST_COLUMNS, listOrder, type ListOrder, type ListRow } from "./list.shape.js";
import { filtered, merged, takeOf, tenantFor } from "./list.sql.js";
import type { Range, WindowPlan } from "./window/plan.js";
import { bracketStatement, bracketValues, spanStatement, type BracketRow, type SpanRow } from "./window/probes.js";
import { onTimeTop, windowPage, windowValues } from "./window/statement.js";

const pages = new QueryTemplates<ListRow>();

/**
 * Up to `take` rows (or a few more: see takeOf) after `after` of the collection of the tenant
 * whose key has the hash `keyHash`, as a compiled query, a window's by its `plan`; no rows when
 * the key is unknown, revoked or lacks the `read` scope.
 */
export function pageQuery(
  db: Kysely<Schema>,
  collection: Collection,
  keyHash: string,
  query: ListQuery,
  after: CursorPosition | undefined,
  take: number,
  plan?: WindowPlan,
): CompiledQuery<ListRow> {
  const order = listOrder(query);
  const limit = takeOf(take);
  const values = pageValues(keyHash, query, after);
  if (plan === undefined) {
    const shape = [collection.name, order, limit, ...Object.keys(values)].join(":");
    return pages.fill(db, shape, values, (s) => plainPage(db, collection, order, s, limit));
  }
  const window = windowValues(query, plan);
  Object.assign(values, window.values);
  const top = order === "created" ? onTimeTop(query, after?.key as number | undefined) : "none";
  const shape = [collection.name, window.shape, top, limit, ...Object.keys(values)].join(":");
  return pages.fill(db, shape, values, (s) => windowPage(db, collection, plan.kind, s, limit, top));
}

/** Whether a page reads a time window: a transaction list's, with either bound. */
export function isWindow(collection: Collection, query: ListQuery): boolean {
  return collection.kind === "transaction" && (query.since !== undefined || query.until !== undefined);
}

/** Every value a page's statement needs but the window's, named; which names are present is part of its shape. */
function pageValues(keyHash: string, query: ListQuery, after: CursorPosition | undefined): Record<string, unknown> {
  const values: Record<string, unknown> = { keyHash, now: Date.now() };
  for (const [name, prefix] of [
    ["name", query.name],
    ["code", query.code],
  ] as const) {
    if (prefix === undefined) continue;
    const low = sortKey(prefix);
    values[`${name}Low`] = low;
    const high = prefixEnd(low);
    if (high !== undefined) values[`${name}High`] = high;
  }
  for (const relation of RELATIONS) {
    if (query.relations[relation] !== undefined) values[relation] = query.relations[relation];
  }
  if (after !== undefined) Object.assign(values, { afterKey: after.key, afterId: after.id });
  return values;
}

/**
 * A page without a window: one index range in the list's order. A transaction list's rows are
 * indexed by createdAt in two parts, on time and late (the window reads them apart), so its
 * plain page merges the two; a relationship filter has an index of its own.
 */
function plainPage(db: Kysely<Schema>, collection: Collection, order: ListOrder, s: Slots, take: number): Compilable<ListRow> {
  const single = order !== "created" || collection.kind !== "transaction" || RELATIONS.some((r) => s[r] !== undefined);
  const tenant = tenantFor(db, s, single ? 1 : 2);
  const base = () => filtered(db, collection, order, s, true, tenant.ref).select(LIST_COLUMNS);
  if (single) return merged(db, [base()], take, tenant, order);
  return merged(db, [base().where("late_event_at", "is", null), base().where("late_event_at", "is not", null)], take, tenant, order);
}

const spans = new QueryTemplates<SpanRow>();

/** The statement that finds the span of the key's tenant's list (window/plan.ts, Span), with the tenant's newest createdAt. */
export function spanQuery(db: Kysely<Schema>, collection: Collection, keyHash: string): CompiledQuery<SpanRow> {
  return spans.fill(db, `${collection.name}:span`, { keyHash, now: Date.now() }, (s) => spanStatement(db, collection, s));
}

const brackets = new QueryTemplates<BracketRow>();

/**
 * The statement that finds the bracket (window/plan.ts, Bracket) of a walk of the key's tenant's
 * window whose late rows lie in `late`, below the cursor `after`; undefined when its tilings of
 * the other dates are too wide, null when no late row lies outside the window.
 */
export function bracketQuery(
  db: Kysely<Schema>,
  collection: Collection,
  keyHash: string,
  query: ListQuery,
  late: Range,
  after: CursorPosition,
): CompiledQuery<BracketRow> | null | undefined {
  const bracket = bracketValues(query, late);
  if (bracket === undefined) return undefined;
  if (bracket.arms === 0) return null;
  const values = { keyHash, now: Date.now(), afterKey: after.key, afterId: after.id, ...bracket.values };
  return brackets.fill(db, [collection.name, "bracket", bracket.shape, ...Object.keys(values)].join(":"), values, (s) =>
    bracketStatement(db, collection, s),
  );
}
