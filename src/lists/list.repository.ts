/**
 * The one list query, for every collection: tenant first (found from the reader's API key in
 * the same query, see list.service.ts), then the filters as index ranges or equalities, then a
 * keyset condition written as a row value so that it stays an index range on both engines,
 * ordered by the sort key and id. Compiled once per shape (see storage/query-template.ts);
 * each page fills in its values.
 */
import { CompiledQuery, sql, type Compilable, type Kysely, type RawBuilder, type SelectQueryBuilder, type SqlBool } from "kysely";
import { RELATION_COLUMNS, RELATIONS, type Collection } from "../collections/define.js";
import { prefixEnd, sortKey } from "../collections/sort-key.js";
import type { CursorPosition } from "../platform/cursor.js";
import { engineOf } from "../storage/engine.js";
import { QueryTemplates, type Slots } from "../storage/query-template.js";
import { compareCodePoints, KEYS_LATE_BOUND } from "./window-keys.js";
import type { Schema } from "../storage/schema.js";
import type { ListQuery } from "./list.query.js";
import { LIST_COLUMNS, listOrder, ORDERS, type FilteredQuery, type ListOrder, type ListRow, type RowsQuery } from "./list.shape.js";
import {
  armAUpperBound,
  assumedValues,
  bracketTiles,
  bracketValues,
  bucketOf,
  byTops,
  EDGE_LEVEL,
  inLateRowsOrder,
  lateArm,
  lateByCreatedArm,
  lateRowsArm,
  lateTiles,
  NAME_INDEX_PAGES,
  NAME_PROBE_PAGES,
  onTimeArm,
  RECENT_SCAN,
  TOPS_RANK,
  unorderedValues,
  WINDOW_FIRST_BOUND,
  WINDOW_KEYS_BOUND,
  weekOf,
  weekTiles,
  weekValues,
  windowValues,
  type ArmAUpperBound,
  type Bracket,
  type LateRange,
  type Tops,
} from "./window.js";

/**
 * A page's row; the first page of a window in name order also carries the plan it picked
 * (choosingPage): 1 for the window's own rows, 0 for the name index, 2 for the name index with
 * the walk's later pages read from the window's keys.
 */
export type PageRow = ListRow & { window_first?: number | string; recent_more?: number | string | null };

const templates = new QueryTemplates<PageRow>();

/**
 * Up to `take` rows after `after` of the collection of the tenant whose key has the hash
 * `keyHash`, as a compiled query; no rows when the key is unknown, revoked or lacks the
 * `read` scope.
 */
export function pageQuery(
  db: Kysely<Schema>,
  collection: Collection,
  keyHash: string,
  query: ListQuery,
  after: CursorPosition | undefined,
  take: number,
  options: WindowPlan = {},
  now = Date.now(),
): CompiledQuery<PageRow> {
  const order = listOrder(query);
  after ??= order === "created" ? belowNewest(options.newest) : undefined;
  const unordered = order !== "created" && tilesWindow(collection, query);
  const weeks = options.notByWeek === true ? undefined : weeksOf(collection, query, now);
  const plan =
    options.recent === true && order === "created" && tilesWindow(collection, query)
      ? "recent"
      : pagePlan(unordered, weeks !== undefined, options);
  // A window that its weeks serve needs no plan of its walk's: any page is read by week.
  const byName = plan === "weeks" ? undefined : options.byName;
  const window =
    weeks ??
    (plan === "keys" || plan === "probed" || plan === "recent"
      ? windowValues(query, false)
      : unordered
        ? unorderedValues(query, now)
        : options.byCreated === true && order === "created"
          ? byCreatedValues(query, options.bracket)
          : tiledValues(query, collection.kind === "transaction" && order === "created", options));
  const values = pageValues(keyHash, now, query, after, window);
  // A page by its tops checks the late rows stored since them instead (byTops).
  if (options.assumed === true && options.late !== undefined && order === "created" && window.topsAsOf === undefined)
    Object.assign(values, assumedValues(options.late));
  if (typeof byName === "object") {
    values.keysNewest = byName.newest;
    for (let i = 0; i < take; i += 1) values[`k${i}`] = byName.ids[i] ?? null;
  }
  const upper = armAUpperBound(query, after);
  const shape = [collection.name, order, take, upper, plan, ...Object.keys(values)].join(":");
  return templates.fill(db, shape, values, (slots) => {
    if (plan === "choosing") return choosingPage(db, collection, slots, take);
    if (plan === "keys") return keysPage(db, collection, slots, take);
    if (plan === "weeks") return weeksPage(db, collection, slots, take);
    if (plan === "probed") return probedNamePage(db, collection, slots, take);
    if (plan === "recent") return recentPage(db, collection, slots, take);
    return buildPage(db, collection, order, slots, take, upper);
  });
}

/** A page's window values by its tiling, or by that tiling's tops (WindowPlan.tops) where they leave arms out. */
function tiledValues(query: ListQuery, tiled: boolean, { late, tops }: WindowPlan): Record<string, number> {
  const values = windowValues(query, tiled, late);
  return (tiled && tops !== undefined && byTops(tops, () => values)?.values) || values;
}

/** A page's window values for its late rows read as one arm by createdAt, above its bracket's `above` (WindowPlan.byCreated). */
function byCreatedValues(query: ListQuery, bracket: Bracket | undefined): Record<string, number> {
  const above = bracket?.above ?? null;
  return { ...windowValues(query, false), lateByCreatedAt: 1, ...(above !== null && { createdAbove: above }) };
}

/**
 * The weeks a page in name order reads its window by (window.ts, weekValues), as its values:
 * for a window of a few weeks, up to a day from `now` when open at its end; undefined for any
 * other page.
 */
export function weeksOf(collection: Collection, query: ListQuery, now: number): Record<string, number> | undefined {
  return listOrder(query) === "name" && tilesWindow(collection, query) ? weekValues(query, now) : undefined;
}

/**
 * Which statement reads a page: for a window in no createdAt order (`unordered`), by week, or
 * as its walk's plan says (WindowPlan.byName), or, for a walk's first page, the name index if
 * its probe agrees (WindowPlan.probeFirst), else the one that picks.
 */
function pagePlan(
  unordered: boolean,
  byWeek: boolean,
  { byName, probeFirst }: WindowPlan,
): "" | "weeks" | "probed" | "choosing" | "name-index" | "keys" {
  if (!unordered) return "";
  if (byWeek) return "weeks";
  if (byName === undefined) return probeFirst === true ? "probed" : "choosing";
  return byName === "name-index" ? byName : "keys";
}

/**
 * A later page of a walk in name order read from its window's keys (lists/window-keys.ts): the
 * ids that follow its cursor there. Its rows come in no order: see sortedByName.
 */
export interface KeysPage {
  ids: string[];
  /** The tenant's newest createdAt when the keys were read: the page reads the window's rows stored since too. */
  newest: number;
}

/** How a page reads its time window, decided before its query (list.service.ts). */
export interface WindowPlan {
  /** Where the tenant's late rows lie, for a window in createdAt order that needs it (see needsLateRange). */
  late?: LateRange | null;
  /**
   * Set when `late` was assumed (assumedLateRange), not found: the page checks in its own
   * statement that no late row lies outside it (verifiedTenant), and holds no row when one does.
   */
  assumed?: boolean;
  /**
   * In name order, how a walk's later page reads its window: by the name index, or by the
   * window's keys that follow its cursor (KeysPage). Undefined for a walk's first page, which
   * picks in its own statement (choosingPage), whose rows then carry the plan it picked as
   * `window_first`.
   */
  byName?: "name-index" | KeysPage;
  /**
   * Set for a page in name order with no plan of its walk's (its first page, or one after pages
   * read by week) whose window likely holds a large share of its tenant's rows (lists/window.ts,
   * NAME_FIRST_SHARE): it is read by the name index, and holds no row unless the name index's
   * first entries show the window a share (probedNamePage). One that holds none is read again by
   * the statement that picks (choosingPage).
   */
  probeFirst?: boolean;
  /**
   * Set for a page in createdAt order of a window that reaches the present, on a walk's first
   * page or one whose cursor says so: it is read as the plain list's page is, from at most
   * RECENT_SCAN pages' worth of rows, those in the window kept (recentPage). One whose bound
   * stopped it short of `take` rows of the window is read again by the window's tiling
   * (list.service.ts).
   */
  recent?: boolean;
  /**
   * Set when a page of a window open at its end, read by week (weekValues), held no row: a row
   * may lie past its weeks, or its window holds none. It is read again as a wider window is.
   */
  notByWeek?: boolean;
  /**
   * A walk's bracket in createdAt order (window.ts, Bracket), found on its first later page
   * whose tiling takes at least BRACKET_ARMS arms, and carried by its cursors.
   */
  bracket?: Bracket;
  /**
   * Set for a page within its walk's bracket (withinBracket): its late rows are read as one arm
   * by createdAt above the bracket's `above` (lateByCreatedArm). A page whose rows reach no
   * lower than `above` is whole; another is read again by the tiling (list.service.ts).
   */
  byCreated?: boolean;
  /**
   * A walk's first page in createdAt order whose tiling's tops a process has found (window.ts,
   * Tops): it reads only the arms that can hold one of its rows. One whose last row does not lie
   * above every arm it left out, or whose guard finds a late row of the window stored since the
   * tops, or too many (no row), is read again by the whole tiling (list.service.ts).
   */
  tops?: Tops;
  /**
   * The createdAt of the tenant's newest row when `late` was found (null: it had none). A first
   * page reads no row stored since: its tiling, narrowed to where late rows lay, could miss a
   * late row stored since and show a later one, whose cursor would then pass the first for good.
   */
  newest?: number | null;
}

/** A position just above the row `newest` (its createdAt), or below every row when there was none. */
function belowNewest(newest: number | null | undefined): CursorPosition | undefined {
  if (newest === undefined) return undefined;
  return { key: newest === null ? Number.MIN_SAFE_INTEGER : newest + 1, id: "" };
}

/** Whether a page reads the rows of a time window through its arms, in some plan: a transaction list's. */
export function tilesWindow(collection: Collection, query: ListQuery): boolean {
  return collection.kind === "transaction" && (query.since !== undefined || query.until !== undefined);
}

/** Every value a page query needs, named; which names are present is part of its shape. */
function pageValues(
  keyHash: string,
  now: number,
  query: ListQuery,
  after: CursorPosition | undefined,
  window: Record<string, number>,
): Record<string, unknown> {
  const values: Record<string, unknown> = { keyHash, now };
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
  Object.assign(values, window);
  if (after !== undefined) Object.assign(values, { afterKey: after.key, afterId: after.id });
  return values;
}

function buildPage(
  db: Kysely<Schema>,
  collection: Collection,
  order: ListOrder,
  s: Slots,
  take: number,
  upper: ArmAUpperBound,
): Compilable<ListRow> {
  if (order !== "created") return sortedPage(db, collection, order, s, sql.lit(take));
  const page = (q: RowsQuery) => q.orderBy("created_at", "desc").orderBy("id", "desc").limit(sql.lit(take));
  const windowed = s.since !== undefined || s.until !== undefined;
  const late = windowed ? lateTiles(s) : [];
  const lateByCreated = windowed && s.lateByCreatedAt !== undefined;
  // Master data and relationship filters have an index of all their rows by createdAt;
  // a transaction list's rows are indexed by createdAt as two parts, on time and late.
  const single = collection.kind !== "transaction" || RELATIONS.some((r) => s[r] !== undefined);
  // A page by its tops (WindowPlan.tops) may leave arm A out.
  const onTime = s.onTimeLeftOut === undefined;
  const oneArm = single || (windowed && (onTime ? 1 : 0) + (lateByCreated ? 1 : late.length) === 1);
  const tenant = oneArm ? oneArmTenant(db, s, collection) : armsTenant(db, s, collection);
  const base = (withCursor: boolean) => filtered(db, collection, order, s, withCursor, tenant.ref).select(LIST_COLUMNS);
  if (single) return page(base(true));
  const lateArms = lateByCreated ? [lateByCreatedArm(base(true), s)] : late.map((tile) => lateArm(base(true), s, tile));
  const arms = windowed
    ? [...(onTime ? [onTimeArm(base(upper === "cursor"), s, upper)] : []), ...lateArms]
    : [base(true).where("late_event_at", "is", null), base(true).where("late_event_at", "is not", null)];
  return merged(db, arms, take, tenant.with, "created");
}

/**
 * A page in createdAt order of a window that reaches the present (WindowPlan.recent): the first
 * `take` x RECENT_SCAN rows after the cursor in the plain list's order (on-time and late rows,
 * each from its index by createdAt, merged), then those whose event date lies in the window,
 * the first `take`. Exactly the window's page when `take` of them are in it, or when the list
 * holds fewer rows after the cursor than the bound: when it holds at least as many, and fewer
 * than `take` are in the window, a row with `recent_more` set says so (and the page must be
 * read again, list.service.ts). The event date is checked on the rows, after the bound, so
 * that a page never reads more than the bound's rows.
 */
function recentPage(db: Kysely<Schema>, collection: Collection, s: Slots, take: number): Compilable<PageRow> {
  const tenant = armsTenant(db, s);
  const scan = sql.lit(take * RECENT_SCAN);
  // The rows on time or late after the cursor, in their index's order.
  const byCreated = (late: "is" | "is not") =>
    filtered(db, collection, "created", s, true, tenant.ref)
      .where("late_event_at", late, null)
      .orderBy("created_at", "desc")
      .orderBy("id", "desc");
  const arms = (["is", "is not"] as const).map((late) => byCreated(late).select([...LIST_COLUMNS, "event_at"]));
  // Merged as `merged` merges a page's arms (PostgreSQL needs each arm limited), in a subquery.
  const rows = engineOf(db).mergesOrderedUnion
    ? sql`${unionAll(arms.map((arm) => arm.clearOrderBy()))
        .orderBy("created_at", "desc")
        .orderBy("id", "desc")
        .limit(scan)}`
    : sql`(select * from (${sql.join(
        arms.map((arm) => sql`${arm.limit(scan)}`),
        sql` union all `,
      )}) as arms order by created_at desc, id desc limit ${scan})`;
  const columns = sql.join(LIST_COLUMNS.map((column) => sql.ref(column)));
  const page = sql`select ${columns}, cast(null as integer) as recent_more from ${rows} as recent where ${inWindow(s)} order by created_at desc, id desc limit ${sql.lit(take)}`;
  // Run only when the page holds fewer than `take` (the LIMIT stops the union before it): a row
  // that says the bound may have stopped the scan, the list holding at least its rows after the
  // cursor, each arm counted up to it in its index's order.
  const counted = (late: "is" | "is not") =>
    sql`(select count(*) from (${byCreated(late).select(sql.lit(1).as("one")).limit(scan)}) as arm)`;
  const nulls = sql.join(LIST_COLUMNS.map((column) => sql`null as ${sql.ref(column)}`));
  const more = sql`select ${nulls}, 1 as recent_more where ${counted("is")} + ${counted("is not")} >= ${scan}`;
  const query = sql<PageRow>`${tenant.with}select * from (${page}) as page union all ${more} limit ${sql.lit(take)}`;
  return { compile: () => query.compile(db) as CompiledQuery<PageRow> };
}

/**
 * A page of a window in name order by week (window.ts, weekValues): an arm a week of the index
 * of rows by event week and name, in name order from the cursor, the first week checking
 * `since` and the last `until` (if any) on the entries, merged. A window open at its end holds
 * no row when the tenant has one past its last week (verifiedTenant).
 */
function weeksPage(db: Kysely<Schema>, collection: Collection, s: Slots, take: number): Compilable<ListRow> {
  const table = collection.table;
  const weeks = weekTiles(s);
  const tenant = weeks.length === 1 ? oneArmTenant(db, s, collection) : armsTenant(db, s, collection);
  const arms = weeks.map(({ slot, first, last }) => {
    let arm = filtered(db, collection, "name", s, true, tenant.ref).select(LIST_COLUMNS).where(weekOf, "=", slot);
    if (first) arm = arm.where("event_at", ">=", s.since);
    if (last && s.until !== undefined) arm = arm.where("event_at", "<=", s.until);
    return arm;
  });
  return readBy(db, merged(db, arms, take, tenant.with, "name"), table, `${table}_event_week_name`);
}

/**
 * The statement with each read of `table` by the index `index`, where an engine names it
 * (Engine.namesIndexes); as it is elsewhere, whose planner picks it unasked.
 */
function readBy<R>(db: Kysely<Schema>, query: Compilable<R>, table: string, index: string): Compilable<R> {
  if (!engineOf(db).namesIndexes) return query;
  return {
    compile: () => {
      const compiled = query.compile();
      const from = `from "${table}" where`;
      if (!compiled.sql.includes(from)) throw new Error(`no read of ${table} to name ${index} for`);
      return CompiledQuery.raw(compiled.sql.replaceAll(from, `from "${table}" indexed by "${index}" where`), [
        ...compiled.parameters,
      ]) as CompiledQuery<R>;
    },
  };
}

/** A page in name or code order, by that order's index, a window's event dates checked on its entries. */
function sortedPage(
  db: Kysely<Schema>,
  collection: Collection,
  order: Exclude<ListOrder, "created">,
  s: Slots,
  limit: RawBuilder<number>,
  tenant: ArmsTenant["ref"] = tenantOfKey(db, s),
) {
  const o = ORDERS[order];
  let q = filtered(db, collection, order, s, true, tenant).select(LIST_COLUMNS);
  if (s.since !== undefined) q = q.where("event_at", ">=", s.since);
  if (s.until !== undefined) q = q.where("event_at", "<=", s.until);
  return q.orderBy(o.column, o.direction).orderBy("id", o.direction).limit(limit);
}

/** The arms as one `UNION ALL`. */
function unionAll<O>(arms: SelectQueryBuilder<Schema, "withdrawals", O>[]): SelectQueryBuilder<Schema, "withdrawals", O> {
  const [first, ...rest] = arms;
  if (first === undefined) throw new Error("a union needs an arm");
  return rest.reduce((union, arm) => union.unionAll(arm), first);
}

type UnorderedArms<O> = [on: SelectQueryBuilder<Schema, "withdrawals", O>, late: SelectQueryBuilder<Schema, "withdrawals", O>];

/**
 * The window's rows in no particular order (window.ts): arm A, then its late rows as one range,
 * each arm selecting what `select` makes of the tenant's rows.
 */
function unorderedArms<O>(s: Slots, select: () => SelectQueryBuilder<Schema, "withdrawals", O>): UnorderedArms<O> {
  return [onTimeArm(select(), s, s.until === undefined ? "none" : "until"), lateRowsArm(select(), s)];
}

/**
 * The unordered arms each asked in its index's order, so that PostgreSQL reads each by that
 * index and stops where its reader does (with sorts disabled, an order no index gives costs
 * more than any plan that reads by one). An arm that the planner estimates smaller than its
 * reader's bound it may still read whole and sort.
 */
function inIndexOrder<O>([onTime, late]: UnorderedArms<O>): UnorderedArms<O> {
  return [onTime.orderBy("created_at", "desc").orderBy("id", "desc"), inLateRowsOrder(late)];
}

/** A window's row as the window-first page sets it apart: what it is sorted by, and its address. */
interface WindowRow {
  id: string;
  name_key: string;
  address: string;
}

/**
 * The window's rows that a window-first page sorts, as the `with` query `w`, where a `with` query
 * is run whole (not Engine.readsWithOnDemand; else windowEntries): their ids and names and
 * addresses (Engine.rowAddress). Each arm checks the page's name range and cursor on its
 * index entries (both indexes keep the name), so that only the rows it keeps are read from the
 * table and set apart. The arms must still be read by their own indexes, not by the name's:
 * where a column can be kept from choosing an index (Engine.hidesFromIndex) the conditions are
 * written so; otherwise each arm is asked in its index's order (inIndexOrder), which with sorts
 * disabled no other index gives for less.
 */
function windowRows(db: Kysely<Schema>, collection: Collection, s: Slots): RawBuilder<WindowRow> {
  const table = collection.table as "withdrawals";
  const { rowAddress } = engineOf(db);
  const arm = () =>
    inPage(s, unindexed(db, "name_key"), unindexed(db, "id"))
      .reduce((q, term) => q.where(term), db.selectFrom(table).where("tenant_id", "=", tenantOfKey(db, s)))
      .select(["id", "name_key", sql<string>`${sql.raw(rowAddress)}`.as("address")]);
  return unorderedUnion(db, unorderedArms(s, arm));
}

/**
 * The unordered arms as one `UNION ALL` in parentheses, as a `with` query's body or a subquery
 * is written (a query builder in `sql` is wrapped in them): bare where the arms' conditions keep
 * them off other indexes (Engine.hidesFromIndex), else each asked in its index's order.
 */
function unorderedUnion<O>(db: Kysely<Schema>, arms: UnorderedArms<O>): RawBuilder<O> {
  return engineOf(db).hidesFromIndex
    ? sql<O>`${unionAll(arms)}`
    : sql<O>`(${sql.join(
        inIndexOrder(arms).map((arm) => sql`(${arm})`),
        sql` union all `,
      )})`;
}

/**
 * A column as a condition that must not choose an index names it: `+column` where the engine
 * can keep a column from choosing one (Engine.hidesFromIndex), else the column, and the
 * statement is asked in its index's order instead (inIndexOrder).
 */
function unindexed<T>(db: Kysely<Schema>, column: "name_key" | "id" | "created_at"): RawBuilder<T> {
  return engineOf(db).hidesFromIndex ? sql<T>`+${sql.ref(column)}` : sql<T>`${sql.ref(column)}`;
}

/** The page's name range and cursor, as conditions on the columns as written. */
function inPage(s: Slots, nameKey: RawBuilder<string>, id: RawBuilder<string>): RawBuilder<SqlBool>[] {
  const terms: RawBuilder<SqlBool>[] = [];
  if (s.nameLow !== undefined) terms.push(sql`${nameKey} >= ${s.nameLow}`);
  if (s.nameHigh !== undefined) terms.push(sql`${nameKey} < ${s.nameHigh}`);
  if (s.afterKey !== undefined) terms.push(sql`(${nameKey}, ${id}) > (${s.afterKey}, ${s.afterId})`);
  return terms;
}

/**
 * A page of a window in name order, read from the window's own rows (windowRows), set apart as
 * a materialized `w` so that no planner reads the page by the name index instead: the page's ids
 * in name order, then their rows, joined back by their address within the statement. Taken only
 * for a window of at most WINDOW_FIRST_BOUND rows (windowCount), so that what it reads is bounded.
 */
function windowFirstPage(db: Kysely<Schema>, collection: Collection, s: Slots, limit: RawBuilder<number>) {
  const table = collection.table as "withdrawals";
  return db
    .with(
      (cte) => cte("w").materialized(),
      () => windowRows(db, collection, s),
    )
    .selectFrom((eb) =>
      inPage(s, sql`w.name_key`, sql`w.id`)
        .reduce((q, term) => q.where(term), eb.selectFrom("w"))
        .select(["w.id", "w.name_key", "w.address"])
        .orderBy("w.name_key")
        .orderBy("w.id")
        .limit(limit)
        .as("p"),
    )
    .innerJoin(`${table} as t`, (join) => join.on(sql`t.${sql.raw(engineOf(db).rowAddress)}`, "=", sql.ref("p.address")))
    .select(LIST_COLUMNS.map((column) => `t.${column}` as const))
    .orderBy("p.name_key")
    .orderBy("p.id");
}

/**
 * A window's keys as windowKeysQuery reads them: how many rows it counted in the window, and the
 * keys in the name range as a JSON array of `[name_key, id]` in name order (null: too many rows
 * to read them; text or already parsed, as the driver gives it).
 */
export interface WindowKeysRow {
  n: number | string;
  keys: string | [string, string][] | null;
}

const keyLists = new QueryTemplates<WindowKeysRow>();

/**
 * The ids and names of a window's rows in the query's name range stored up to `newest` (the
 * tenant's newest createdAt as newestQuery found it), in name order (lists/window-keys.ts), the
 * name checked on the index entries; read only when the window's rows, whatever their names,
 * count no more than WINDOW_KEYS_BOUND (windowCount, first). As one row, a JSON array: a driver
 * takes it for less than a row a key. No keys when the key is unknown, revoked or lacks the
 * `read` scope (a count of 0).
 */
export function windowKeysQuery(
  db: Kysely<Schema>,
  collection: Collection,
  keyHash: string,
  query: ListQuery,
  newest: number,
): CompiledQuery<WindowKeysRow> {
  const now = Date.now();
  const values = { ...pageValues(keyHash, now, query, undefined, unorderedValues(query, now)), keysNewest: newest };
  return keyLists.fill(db, [collection.name, "window-keys", ...Object.keys(values)].join(":"), values, (s) => {
    const table = collection.table as "withdrawals";
    const { jsonArrays } = engineOf(db);
    // The name range kept from choosing the name index, as in windowRows.
    const inRange = inPage({ nameLow: s.nameLow, nameHigh: s.nameHigh }, unindexed(db, "name_key"), unindexed(db, "id"));
    // Stored up to `newest`, checked on the entries: as an index bound, SQLite (which takes one a
    // side, combinesRangeBounds) would read from the window's start up to then.
    const rows = () =>
      [...inRange, sql<SqlBool>`${unindexed(db, "created_at")} <= ${s.keysNewest}`]
        .reduce((q, term) => q.where(term), db.selectFrom(table).where("tenant_id", "=", tenantOfKey(db, s)))
        .select(["id", "name_key"]);
    const arms = unorderedArms(s, rows);
    const entries = unorderedUnion(db, arms);
    const keys = sql`select ${sql.raw(jsonArrays.aggregate)}(${sql.raw(jsonArrays.of)}(name_key, id) order by name_key, id) from ${entries} as k`;
    const counted = windowCount(db, collection, s, WINDOW_KEYS_BOUND);
    // Materialized: inlined, PostgreSQL would count twice, once for each `n`.
    const query = sql<WindowKeysRow>`with counted as materialized (${counted}) select n, case when n <= ${sql.lit(WINDOW_KEYS_BOUND)} then (${keys}) end as keys from counted`;
    return { compile: () => query.compile(db) as CompiledQuery<WindowKeysRow> };
  });
}

export interface NewestRow {
  newest_on_time: number | string | null;
  newest_late: number | string | null;
}

const newestRows = new QueryTemplates<NewestRow>();

/** The createdAt of the newest row on time and late of the key's tenant's list (lateRangeQuery finds them too): see newestStored. */
export function newestQuery(db: Kysely<Schema>, collection: Collection, keyHash: string): CompiledQuery<NewestRow> {
  return newestRows.fill(db, `${collection.name}:newest`, { keyHash, now: Date.now() }, (s) =>
    db.selectNoFrom([
      newestRowQuery(db, collection, s, "is").as("newest_on_time"),
      newestRowQuery(db, collection, s, "is not").as("newest_late"),
    ]),
  );
}

/** The createdAt of the tenant's newest row on time (`is` null) or late, each from its index by createdAt. */
function newestRowQuery(db: Kysely<Schema>, collection: Collection, s: Slots, late: "is" | "is not") {
  return db
    .selectFrom(collection.table as "withdrawals")
    .select("created_at")
    .where("tenant_id", "=", tenantOfKey(db, s))
    .where("late_event_at", late, null)
    .orderBy("created_at", "desc")
    .limit(sql.lit(1));
}

/** A keysPage's rows in name order, as the database orders them, the first `take`. */
export function sortedByName<R extends ListRow>(rows: R[], take: number): R[] {
  return rows.sort((a, b) => compareCodePoints(a.name_key, b.name_key) || compareCodePoints(a.id, b.id)).slice(0, take);
}

/**
 * A later page of a walk in name order from its window's keys (KeysPage): the rows of the ids
 * that follow its cursor there, by primary key, and the window's rows in the page's name range
 * stored since the keys were read, by createdAt (on time from the index of on-time rows within
 * arm A's range, late from the late rows' index by createdAt, their event date checked on the
 * row), in no order: the caller sorts them (sortedByName). A tenant that stored more than
 * KEYS_LATE_BOUND late rows since (an import) would make every page read them all: the page
 * then holds no row, and list.service.ts reads it by the name index and the keys again.
 */
function keysPage(db: Kysely<Schema>, collection: Collection, s: Slots, take: number): Compilable<ListRow> {
  const table = collection.table as "withdrawals";
  const lateSince = db
    .selectFrom(`${table} as v`)
    .select(sql.lit(1).as("one"))
    .where("v.tenant_id", "=", sql.ref<number>("api_keys.tenant_id"))
    .where("v.late_event_at", "is not", null)
    .where("v.created_at", ">", s.keysNewest)
    .orderBy("v.created_at")
    .limit(sql.lit(KEYS_LATE_BOUND + 1));
  const reader = tenantOfKey(db, s).where(sql<SqlBool>`(select count(*) from (${lateSince}) as since) <= ${sql.lit(KEYS_LATE_BOUND)}`);
  const tenant = sql<number>`(select tenant_id from reader)`;
  const rows = () => db.selectFrom(table).where("tenant_id", "=", tenant).select(LIST_COLUMNS);
  const ids = Array.from({ length: take }, (_, i) => s[`k${i}`] as string);
  // The name range and cursor kept from choosing the name index, as in windowRows.
  const inRange = inPage(s, unindexed(db, "name_key"), unindexed(db, "id"));
  const since = (q: RowsQuery) => inRange.reduce((arm, term) => arm.where(term), q.where("created_at", ">", s.keysNewest));
  let late = since(rows()).where("late_event_at", "is not", null);
  if (s.since !== undefined) late = late.where("late_event_at", ">=", s.since);
  if (s.until !== undefined) late = late.where("late_event_at", "<=", s.until);
  const arms = [rows().where("id", "in", ids), onTimeArm(since(rows()), s, s.until === undefined ? "none" : "until"), late];
  // The arms of rows stored since in their index's order, which with sorts disabled PostgreSQL
  // reads by that index (inIndexOrder). The ids are not: in id order it reads the tenant's whole
  // primary key range, checking each entry against the list; in none, a bitmap of their entries.
  const union = engineOf(db).mergesOrderedUnion
    ? sql`${unionAll(arms)}`
    : sql`(${sql.join(
        arms.map((arm, i) => sql`(${i === 0 ? arm : arm.orderBy("created_at").orderBy("id")})`),
        sql` union all `,
      )})`;
  // In no order: sorted, SQLite would read each arm in name order by the name index instead, and
  // the few rows are sorted for less by the caller (sortedByName).
  const query = sql<ListRow>`with reader as materialized ${reader} select * from ${union} as page`;
  return { compile: () => query.compile(db) as CompiledQuery<ListRow> };
}

/**
 * A page of a window in name order that chooses its own plan, for a walk's first page. A window
 * that fits in the page is read whole, found by counting it up to `take` (windowCount).
 * Otherwise, unless the tenant's rows span the window many times over (spansWider), the name
 * index's first NAME_PROBE_PAGES pages' worth of entries are read: when enough of the window's
 * rows lie among them (probeHits: a window that holds a large share of the tenant's rows), the
 * name index serves every page from a bounded number of entries, and the walk's later pages
 * read the window's keys if the tenant's rows span a bounded window more than KEYS_SHARE times
 * over (spansWider), where the engine finds that worth it (Engine.keysForSmallShares). Otherwise
 * the window's rows are counted up to WINDOW_FIRST_BOUND: the window's own rows when the count
 * stays within it, else the name index, the later pages by the window's keys (2 in
 * `window_first`; WINDOW_KEYS_BOUND decides). Each plan is a branch whose limit
 * is the page's for the plan picked and 0 for the other, and a limit of 0 ends a branch before
 * it reads anything (a condition in a WHERE did not, on SQLite: it read the window's own rows
 * even for a year's window); a `case` reads no more than it needs of the three. The counts read
 * the window's index entries alone, every row of it whatever its name, as the window-first page
 * reads them. One statement where a count and a page took two, a round trip each on PostgreSQL.
 * Each row carries the plan picked (`window_first`), which the walk's cursors keep. Where a
 * `with` query is read on demand (Engine.readsWithOnDemand), the statement looks the key up
 * once and reads the window's entries once (windowEntries), for both counts and the window-first
 * page: a plan of fewer scans, which PostgreSQL starts for every execution, branches unrun too.
 */
function choosingPage(db: Kysely<Schema>, collection: Collection, s: Slots, take: number): Compilable<PageRow> {
  const onDemand = engineOf(db).readsWithOnDemand;
  const tenant = () => (onDemand ? sql<number>`(select tenant_id from reader)` : tenantOfKey(db, s));
  const limitIf = (windowFirst: boolean) =>
    sql<number>`(select case when window_first ${sql.raw(windowFirst ? "=" : "<>")} 1 then ${sql.lit(take)} else 0 end from picked)`;
  const small = onDemand
    ? pageOfWindowEntries(db, collection, s, limitIf(true), tenant())
    : windowFirstPage(db, collection, s, limitIf(true));
  const large = sortedPage(db, collection, "name", s, limitIf(false), tenant());
  const probe = nameIndexProbe(db, collection, s, take, tenant());
  const counted = (bound: number) =>
    onDemand
      ? sql`(select count(*) from (select 1 from w limit ${sql.lit(bound + 1)}) as counted)`
      : sql`(select n from (${windowCount(db, collection, s, bound)}) as counted)`;
  const countedTo = (bound: number) => sql`${counted(bound)} <= ${sql.lit(bound)}`;
  // A window that the tenant's rows span many times over skips the probe, which would not find it a share.
  const bounded = s.spanBefore !== undefined;
  const probed = bounded ? sql`case when ${spansWider(db, collection, s, "span", tenant())} then 0 else (${probe}) end` : sql`(${probe})`;
  // Served by the name index, a bounded window that the tenant's rows span wide enough takes the window's keys later.
  const byName =
    bounded && engineOf(db).keysForSmallShares
      ? sql`case when ${spansWider(db, collection, s, "keys", tenant())} then 2 else 0 end`
      : sql`0`;
  const pick = sql`select case when ${countedTo(take)} then 1 when ${probed} >= ${sql.lit(probeHits(take))} then ${byName} when ${countedTo(WINDOW_FIRST_BOUND)} then 1 else 2 end as window_first`;
  const withs = onDemand
    ? sql`with reader as materialized ${tenantOfKey(db, s)}, w as materialized ${windowEntries(db, collection, s, tenant())}, `
    : sql`with `;
  const query = sql<PageRow>`${withs}picked as materialized (${pick}) select chosen.*, (select window_first from picked) as window_first from (select * from (${small}) as small union all select * from (${large}) as large) as chosen order by name_key, id`;
  return { compile: () => query.compile(db) as CompiledQuery<PageRow> };
}

/**
 * A page of a window in name order by the name index, as a walk's page that choosingPage sent
 * there reads it, but limited to no row unless the name index's first entries show the window a
 * share that the name index serves (nameIndexProbe): choosingPage's pick with neither count nor
 * the probes of how wide the tenant's rows span (spansWider), and the walk's later pages by the
 * name index too, never the window's keys, for a window that its tenant's span shows likely so
 * large a share (WindowPlan.probeFirst) that those would only cost. A window of fewer rows than
 * the page that passes the probe is read from the name index all the same, to the end of the
 * name's range: the same rows.
 */
function probedNamePage(db: Kysely<Schema>, collection: Collection, s: Slots, take: number): Compilable<ListRow> {
  const probe = nameIndexProbe(db, collection, s, take, tenantOfKey(db, s));
  const limit = sql<number>`(select case when (${probe}) >= ${sql.lit(probeHits(take))} then ${sql.lit(take)} else 0 end)`;
  return sortedPage(db, collection, "name", s, limit);
}

/**
 * Every row of the window whatever its name, as ids and names in no order, from its arms' index
 * entries alone, each arm in its index's order (inIndexOrder): the `w` of a choosing page where a
 * `with` query is read on demand (Engine.readsWithOnDemand). Its counts read only the entries
 * they count, and the window-first page, taken only when they stay within WINDOW_FIRST_BOUND,
 * reads the rest: each entry is read once, where the counts and the page read theirs apart.
 */
function windowEntries(db: Kysely<Schema>, collection: Collection, s: Slots, tenant: ArmsTenant["ref"]): RawBuilder<WindowEntry> {
  const table = collection.table as "withdrawals";
  return unorderedUnion(
    db,
    unorderedArms(s, () => db.selectFrom(table).where("tenant_id", "=", tenant).select(["id", "name_key"])),
  );
}

interface WindowEntry {
  id: string;
  name_key: string;
}

/**
 * A window-first page read from windowEntries (`w`): the page's ids in name order, then their
 * rows by primary key. The entries carry no address, which PostgreSQL reads only from the table,
 * not from an index's entries.
 */
function pageOfWindowEntries(db: Kysely<Schema>, collection: Collection, s: Slots, limit: RawBuilder<number>, tenant: ArmsTenant["ref"]) {
  const table = collection.table as "withdrawals";
  const withEntries = db as unknown as Kysely<Schema & { w: WindowEntry }>;
  return withEntries
    .selectFrom((eb) =>
      inPage(s, sql`w.name_key`, sql`w.id`)
        .reduce((q, term) => q.where(term), eb.selectFrom("w"))
        .select(["w.id", "w.name_key"])
        .orderBy("w.name_key")
        .orderBy("w.id")
        .limit(limit)
        .as("p"),
    )
    .innerJoin(`${table} as t`, (join) => join.on("t.tenant_id", "=", tenant).onRef("t.id", "=", "p.id"))
    .select(LIST_COLUMNS.map((column) => `t.${column}` as const))
    .orderBy("p.name_key")
    .orderBy("p.id");
}

/**
 * Whether the tenant has a row more than SPAN_SHARE times a bounded window's width before or
 * after it (`s.spanBefore` and `s.spanAfter`; `s.spanLateBefore` and `s.spanLateAfter`, their
 * 8-hour buckets, for late rows): an on-time row by its createdAt, a late one by its bucket,
 * each side a probe of one entry of an index that ends at the first. A window that holds more
 * than a page of rows (choosingPage asks only then) then lies in a span of the tenant's rows
 * that wide: spread evenly, too small a share of them for the name index to serve it
 * (NAME_INDEX_PAGES). If its rows crowd into the window instead, the count finds more than
 * WINDOW_FIRST_BOUND of them and the name index serves it all the same. The same with
 * KEYS_SHARE (`s.keysBefore` and so on) for the window's keys.
 */
function spansWider(
  db: Kysely<Schema>,
  collection: Collection,
  s: Slots,
  name: "span" | "keys",
  tenant: ArmsTenant["ref"],
): RawBuilder<SqlBool> {
  const table = collection.table as "withdrawals";
  const bucket = bucketOf(EDGE_LEVEL);
  const beyond = (column: "created_at" | typeof bucket, op: "<" | ">", bound: Slots[string]) => {
    const rows = db.selectFrom(table).select(sql.lit(1).as("one")).where("tenant_id", "=", tenant);
    const side = column === "created_at" ? rows.where("late_event_at", "is", null) : rows.where(bucket, "is not", null);
    // In the index's order from the bound: the one plan is a probe of that index (`exists`
    // drops an order, and let PostgreSQL scan the table, reckoning a match would come soon).
    const first = side.where(column, op, bound).orderBy(column, op === "<" ? "desc" : "asc");
    return sql<SqlBool>`(${first.limit(sql.lit(1))}) is not null`;
  };
  const sides = [beyond("created_at", "<", s[`${name}Before`]), beyond(bucket, "<", s[`${name}LateBefore`])];
  if (s[`${name}After`] !== undefined) sides.push(beyond("created_at", ">", s[`${name}After`]), beyond(bucket, ">", s[`${name}LateAfter`]));
  return sql.join(sides, sql` or `);
}

/** The window's bounds as a condition on `event_at`, for a query that reads it from a subquery's rows. */
function inWindow(s: Slots): RawBuilder<SqlBool> {
  const terms: RawBuilder<SqlBool>[] = [];
  if (s.since !== undefined) terms.push(sql`event_at >= ${s.since}`);
  if (s.until !== undefined) terms.push(sql`event_at <= ${s.until}`);
  return sql.join(terms, sql` and `) as RawBuilder<SqlBool>;
}

/** How many of the window's rows among the probe's entries show it a share of at least 1 / NAME_INDEX_PAGES. */
const probeHits = (take: number) => Math.ceil((take * NAME_PROBE_PAGES) / NAME_INDEX_PAGES);

/**
 * How many of the window's rows, up to probeHits, lie among the first `take` x NAME_PROBE_PAGES
 * entries of the name index in the page's name range: the entries are read in the index's order,
 * the event date checked on each.
 */
function nameIndexProbe(db: Kysely<Schema>, collection: Collection, s: Slots, take: number, tenant: ArmsTenant["ref"]): RawBuilder<number> {
  const { column, direction } = ORDERS.name;
  const entries = filtered(db, collection, "name", s, false, tenant)
    .select("event_at")
    .orderBy(column, direction)
    .orderBy("id", direction)
    .limit(sql.lit(take * NAME_PROBE_PAGES));
  return sql<number>`select count(*) from (select 1 from (${entries}) as entries where ${inWindow(s)} limit ${sql.lit(probeHits(take))}) as found`;
}

/**
 * The count of the window's rows up to `bound` + 1, from its unordered arms' index entries
 * (choosingPage). The union stops there; where an engine does not stop a bare union's arms
 * with it, each arm is asked in its index's order (inIndexOrder) and counted in turn, the second
 * up to what the first left of the bound.
 */
function windowCount(db: Kysely<Schema>, collection: Collection, s: Slots, bound: number): RawBuilder<{ n: number | string }> {
  const table = collection.table as "withdrawals";
  const tenant = oneArmTenant(db, s);
  const arms = unorderedArms(s, () => db.selectFrom(table).where("tenant_id", "=", tenant.ref).select(sql.lit(1).as("one")));
  const beyond = sql.lit(bound + 1);
  if (engineOf(db).mergesOrderedUnion) return sql`select count(*) as n from (${unionAll(arms).limit(beyond)}) as w`;
  // The late arm counts only as far as the on-time arm left short of the bound.
  const [onTime, late] = inIndexOrder(arms);
  const rest = sql<number>`greatest(0, ${beyond} - on_time.n)`;
  return sql`select on_time.n + (select count(*) from (${late.limit(rest)}) as arm) as n from (select count(*) as n from (${onTime.limit(beyond)}) as arm) as on_time`;
}

/**
 * The first `take` rows of arms that are each in the page's order (newest first by createdAt,
 * or by name), merged so that each is read only as far as the page needs. SQLite merges a bare
 * `UNION ALL ... ORDER BY ... LIMIT` so; PostgreSQL does (a Merge Append) when each arm is
 * ordered and the union is a subquery, and otherwise sorts every arm whole.
 */
function merged(
  db: Kysely<Schema>,
  arms: RowsQuery[],
  take: number,
  tenantWith: RawBuilder<unknown>,
  order: "created" | "name",
): Compilable<ListRow> {
  const inOrder = (q: RowsQuery) =>
    order === "created" ? q.orderBy("created_at", "desc").orderBy("id", "desc") : q.orderBy("name_key").orderBy("id");
  const [first, ...rest] = arms;
  if (first === undefined) throw new Error("a page needs an arm");
  if (rest.length === 0) return inOrder(first).limit(sql.lit(take));
  if (engineOf(db).mergesOrderedUnion) {
    // Written out after the `with` (its parameters are positional), not embedded, which would
    // put the union in parentheses.
    const union = inOrder(unionAll(arms)).limit(sql.lit(take));
    return {
      compile: () => {
        const [head, body] = [tenantWith.compile(db), union.compile()];
        return CompiledQuery.raw(`${head.sql}${body.sql}`, [...head.parameters, ...body.parameters]) as CompiledQuery<ListRow>;
      },
    };
  }
  const union = sql.join(
    arms.map((arm) => sql`${inOrder(arm).limit(sql.lit(take))}`),
    sql` union all `,
  );
  const orderBy = sql.raw(order === "created" ? "created_at desc, id desc" : "name_key, id");
  const query = sql<ListRow>`${tenantWith}select * from (${union}) as arms order by ${orderBy} limit ${sql.lit(take)}`;
  return { compile: () => query.compile(db) as CompiledQuery<ListRow> };
}

type Probed = number | string | null;
export interface LateRangeRow {
  low: Probed;
  high: Probed;
  newest_on_time: Probed;
  newest_late: Probed;
}

const lateRanges = new QueryTemplates<LateRangeRow>();

/**
 * Where the late rows of the key's tenant's list lie, their first and last event date, and the
 * createdAt of its newest row on time and late, all as of one moment, for windows whose tiling
 * is narrowed to the late rows (see WindowPlan.newest). The event dates are the extremes of the
 * first and last 8-hour bucket that hold a late row, each read whole from its index (at most
 * eight hours of late rows): a range only as fine as the buckets would leave a window that ends
 * inside the last bucket (a year up to now) no room past its end, and twice the arms.
 */
export function lateRangeQuery(db: Kysely<Schema>, collection: Collection, keyHash: string) {
  return lateRanges.fill(db, `${collection.name}:late-range`, { keyHash, now: Date.now() }, (s) => {
    const table = collection.table as "withdrawals";
    const bucket = bucketOf(EDGE_LEVEL);
    const lateRows = () => db.selectFrom(table).where("tenant_id", "=", tenantOfKey(db, s)).where(bucket, "is not", null);
    const extreme = (direction: "asc" | "desc") =>
      lateRows()
        .select((eb) => (direction === "asc" ? eb.fn.min("late_event_at") : eb.fn.max("late_event_at")).as("at"))
        .where(bucket, "=", lateRows().select(bucket.as("bucket")).orderBy(bucket, direction).limit(sql.lit(1)));
    return db.selectNoFrom([
      extreme("asc").as("low"),
      extreme("desc").as("high"),
      newestRowQuery(db, collection, s, "is").as("newest_on_time"),
      newestRowQuery(db, collection, s, "is not").as("newest_late"),
    ]);
  });
}

/** A window's bracket's statement's row: a column per arm (bracketTiles), each null when its bucket holds no late row. */
export type BracketRow = Record<string, Probed>;

const brackets = new QueryTemplates<BracketRow>();

/**
 * The statement that finds a window's bracket (window.ts, Bracket) from the key's tenant's late
 * rows' range: for each bucket of a tiling of the late rows dated before the window, the newest
 * createdAt of its late rows, and for each of those dated after it, the oldest, each one probe of
 * its level's index (an edge, which reaches into the window, checks the event date on its
 * entries). Null when no late row lies outside the window's dates (no arm), undefined when it
 * would take more than MAX_LATE_ARMS arms.
 */
export function bracketQuery(
  db: Kysely<Schema>,
  collection: Collection,
  keyHash: string,
  query: ListQuery,
  late: LateRange,
): CompiledQuery<BracketRow> | null | undefined {
  const window = bracketValues(query, late);
  if (window === undefined) return undefined;
  if (bracketTiles(window).length === 0) return null;
  const values = { keyHash, now: Date.now(), ...window };
  return brackets.fill(db, `${collection.name}:bracket:${Object.keys(values).join(":")}`, values, (s) => {
    const table = collection.table as "withdrawals";
    const tenant = armsTenant(db, s);
    const columns = bracketTiles(s).map(({ side, level, slot, edge }, i) => {
      const bucket = bucketOf(level);
      let arm = db
        .selectFrom(table)
        .select("created_at")
        .where("tenant_id", "=", tenant.ref)
        .where(bucket, "=", slot)
        .where(bucket, "is not", null);
      if (edge) arm = side === "p" ? arm.where("late_event_at", "<", s.since) : arm.where("late_event_at", ">", s.until);
      return sql`(${arm.orderBy("created_at", side === "p" ? "desc" : "asc").limit(sql.lit(1))}) as ${sql.ref(`${side}${i}`)}`;
    });
    const statement = sql<BracketRow>`${tenant.with}select ${sql.join(columns)}`;
    return { compile: () => statement.compile(db) as CompiledQuery<BracketRow> };
  });
}

/** The bracket a statement of bracketQuery found. */
export function bracketOf(row: BracketRow | undefined): Bracket {
  const found = (side: "p" | "q") =>
    Object.entries(row ?? {})
      .filter(([name, at]) => name.startsWith(side) && at !== null && at !== undefined)
      .map(([, at]) => Number(at));
  const [before, after] = [found("p"), found("q")];
  return { above: before.length === 0 ? null : Math.max(...before), below: after.length === 0 ? null : Math.min(...after) };
}

/**
 * A tiling's tops' statement's row: `as_of`; arm A's newest (`n_on`) and TOPS_RANK-th newest
 * (`r_on`), and the same for each tile (lateTiles order, `n<i>`, `r<i>`).
 */
export type TopsRow = Record<string, Probed>;

const topsStatements = new QueryTemplates<TopsRow>();

/**
 * The statement that finds a window's tiling's tops (window.ts, Tops) by a late range (undefined:
 * its own span), all as of one moment: the newest createdAt of the key's tenant's late rows, one
 * probe of their index by createdAt, and for each tile the newest createdAt of its late rows and
 * the TOPS_RANK-th newest, each a probe of its level's index (an edge checks the event date on
 * its entries, as its arm does), and the same of arm A. None when a late row lies outside the
 * late range, checked as a page that assumed it checks it (verifiedTenant). Undefined for a
 * window read by no tiling.
 */
export function topsQuery(
  db: Kysely<Schema>,
  collection: Collection,
  keyHash: string,
  query: ListQuery,
  late: LateRange | null | undefined,
): CompiledQuery<TopsRow> | undefined {
  const window = windowValues(query, true, late);
  if (lateTiles(window).length === 0) return undefined;
  const values = { keyHash, now: Date.now(), ...window, ...(late !== undefined && late !== null && assumedValues(late)) };
  return topsStatements.fill(db, `${collection.name}:tops:${Object.keys(values).join(":")}`, values, (s) => {
    const table = collection.table as "withdrawals";
    const tenant = armsTenant(db, s, collection);
    const lateRows = () => db.selectFrom(table).select("created_at").where("tenant_id", "=", tenant.ref);
    // Each tile's probe reads what its arm of a page reads (lateArm).
    const columns = lateTiles(s).flatMap((tile, i) => {
      const newest = lateArm(lateRows(), s, tile).orderBy("created_at", "desc").limit(sql.lit(1));
      return [sql`(${newest}) as ${sql.ref(`n${i}`)}`, sql`(${newest.offset(sql.lit(TOPS_RANK - 1))}) as ${sql.ref(`r${i}`)}`];
    });
    const asOf = lateRows().where("late_event_at", "is not", null).orderBy("created_at", "desc").limit(sql.lit(1));
    const onTime = onTimeArm(lateRows(), s, s.until === undefined ? "none" : "until")
      .orderBy("created_at", "desc")
      .limit(sql.lit(1));
    const onTimeColumns = [sql`(${onTime}) as n_on`, sql`(${onTime.offset(sql.lit(TOPS_RANK - 1))}) as r_on`];
    const statement = sql<TopsRow>`${tenant.with}select (${asOf}) as as_of, ${sql.join([...onTimeColumns, ...columns])}`;
    return { compile: () => statement.compile(db) as CompiledQuery<TopsRow> };
  });
}

/** The tops a statement of topsQuery found for the window's tiling by `late`; undefined when it found no late row (or the key is no good). */
export function topsOf(row: TopsRow | undefined, query: ListQuery, late: LateRange | null | undefined): Tops | undefined {
  const asOf = row?.as_of;
  if (row === undefined || asOf === null || asOf === undefined) return undefined;
  const at = (probed: Probed | undefined) => (probed === null || probed === undefined ? null : Number(probed));
  const tiles = Object.fromEntries(
    lateTiles(windowValues(query, true, late)).map(({ name }, i) => [name, { newest: at(row[`n${i}`]), ranked: at(row[`r${i}`]) }]),
  );
  return { asOf: Number(asOf), tiles, onTime: { newest: at(row.n_on), ranked: at(row.r_on) } };
}

export interface EventSpanRow {
  low: Probed;
  high: Probed;
}

const eventSpans = new QueryTemplates<EventSpanRow>();

/**
 * The first and last event week of the key's tenant's list (window.ts, EventSpan), each a probe
 * of one entry of the index of rows by event week (every transaction has an event date); none
 * when the key is no good or the list is empty.
 */
export function eventSpanQuery(db: Kysely<Schema>, collection: Collection, keyHash: string): CompiledQuery<EventSpanRow> {
  return eventSpans.fill(db, `${collection.name}:event-span`, { keyHash, now: Date.now() }, (s) => {
    const table = collection.table as "withdrawals";
    const week = (direction: "asc" | "desc") =>
      db
        .selectFrom(table)
        .select(weekOf.as("week"))
        .where("tenant_id", "=", tenantOfKey(db, s))
        .orderBy(weekOf, direction)
        .limit(sql.lit(1));
    return readBy(db, db.selectNoFrom([week("asc").as("low"), week("desc").as("high")]), table, `${table}_event_week_name`);
  });
}

/** What a late-range probe found: the event dates of the late rows, inclusive (null: no late rows), and the newest createdAt. */
export function lateRangeOf(row: LateRangeRow | undefined): Pick<WindowPlan, "late" | "newest"> {
  const newest = newestStored(row);
  if (row === undefined || row.low === null || row.high === null) return { late: null, newest };
  return { late: { low: Number(row.low), high: Number(row.high) }, newest };
}

/** The createdAt of the tenant's newest row, on time or late, that a probe found (null: it has none). */
export function newestStored(row: NewestRow | undefined): number | null {
  const stored = [row?.newest_on_time, row?.newest_late].filter((at) => at !== null && at !== undefined).map(Number);
  return stored.length === 0 ? null : Math.max(...stored);
}

/** How a statement's arms name the reader's tenant, and what the statement must begin with for it. */
interface ArmsTenant {
  ref: ReturnType<typeof tenantOfKey> | RawBuilder<number>;
  with: RawBuilder<unknown>;
}

/**
 * The tenant for a statement of many arms: the key is looked up once, in a `with`, and each
 * arm reads the tenant from there. A look-up in every arm cost PostgreSQL a plan node and a
 * scan of the keys an arm, and SQLite about a microsecond an arm (docs/measurements.md);
 * SQLite still merges the bare union that the `with` leads.
 */
function armsTenant(db: Kysely<Schema>, s: Slots, collection?: Collection): ArmsTenant {
  return { ref: sql<number>`(select tenant_id from reader)`, with: sql`with reader as materialized ${verifiedTenant(db, s, collection)} ` };
}

/** The tenant for a statement of one arm: the key looked up where it is needed. */
function oneArmTenant(db: Kysely<Schema>, s: Slots, collection?: Collection): ArmsTenant {
  return { ref: verifiedTenant(db, s, collection), with: sql`` };
}

/**
 * The key's tenant, and for a page whose tiling assumes that no late row lies past an event date
 * (`s.beyond`), nor before one (`s.below`), see WindowPlan.assumed, none when one does: for each,
 * one probe of the 8-hour buckets' index from that date's bucket on (`s.beyondBucket`,
 * `s.belowBucket`), the event date checked on its entries, in the page's own statement and
 * snapshot, so that the page holds no row or every row of its window. The same for a page by
 * week of a window open at its end (`s.pastWeek`, weekValues): none when the tenant has a row in
 * a later week, one probe of the weeks' index. And for a page by its tops, none when too many
 * late rows were stored since them.
 */
function verifiedTenant(db: Kysely<Schema>, s: Slots, collection: Collection | undefined) {
  const tenant = tenantOfKey(db, s);
  if (s.pastWeek !== undefined && collection !== undefined) {
    // In the index's order from the week, unaliased so that SQLite's `INDEXED BY` names it too (readBy).
    const later = db
      .selectFrom(collection.table as "withdrawals")
      .select(weekOf.as("week"))
      .where("tenant_id", "=", sql.ref<number>("api_keys.tenant_id"))
      .where(weekOf, ">", s.pastWeek)
      .orderBy(weekOf)
      .limit(sql.lit(1));
    return tenant.where(sql<SqlBool>`(${later}) is null`);
  }
  // A page by its tops (WindowPlan.tops), none when TOPS_RANK late rows or more were stored
  // since them, or one dated in the window: one probe of the late rows' index by createdAt, from
  // the tops' moment up, which counts each such row TOPS_RANK times.
  let sinceTops = tenant;
  if (s.topsAsOf !== undefined && collection !== undefined) {
    const stored = db
      .selectFrom(`${collection.table as "withdrawals"} as v`)
      .select("v.late_event_at")
      .where("v.tenant_id", "=", sql.ref<number>("api_keys.tenant_id"))
      .where("v.late_event_at", "is not", null)
      .where("v.created_at", ">", s.topsAsOf)
      .orderBy("v.created_at")
      .limit(sql.lit(TOPS_RANK));
    const bounds = [
      ...(s.since === undefined ? [] : [sql`late_event_at >= ${s.since}`]),
      ...(s.until === undefined ? [] : [sql`late_event_at <= ${s.until}`]),
    ];
    const counted = sql`(select coalesce(sum(case when ${sql.join(bounds, sql` and `)} then ${sql.lit(TOPS_RANK)} else 1 end), 0) from (${stored}) as since_tops)`;
    sinceTops = tenant.where(sql<SqlBool>`${counted} < ${sql.lit(TOPS_RANK)}`);
  }
  if (s.beyond === undefined || collection === undefined) return sinceTops;
  const bucket = bucketOf(EDGE_LEVEL);
  // A late row of the tenant's past the date, asked in its index's order: the one plan is a
  // probe of that index (`not exists` gave PostgreSQL an anti-join over every tenant's late
  // rows, and a condition with no order a scan of the table that its statistics made look cheap).
  const outside = (side: ">" | "<", at: Slots[string], atBucket: Slots[string]) =>
    db
      .selectFrom(`${collection.table as "withdrawals"} as v`)
      .select(bucket.as("bucket"))
      .where("v.tenant_id", "=", sql.ref<number>("api_keys.tenant_id"))
      .where(bucket, side === ">" ? ">=" : "<=", atBucket)
      .where(bucket, "is not", null)
      .where("v.late_event_at", side, at)
      .orderBy(bucket, side === ">" ? "desc" : "asc")
      .limit(sql.lit(1));
  const checked = sinceTops.where(sql<SqlBool>`(${outside(">", s.beyond, s.beyondBucket)}) is null`);
  return s.below === undefined ? checked : checked.where(sql<SqlBool>`(${outside("<", s.below, s.belowBucket)}) is null`);
}

/** The tenant of the API key whose hash is `s.keyHash`, when the key is not revoked, has not expired by `s.now`, and may read. */
function tenantOfKey(db: Kysely<Schema>, s: Slots) {
  return db
    .selectFrom("api_keys")
    .select("api_keys.tenant_id")
    .where("api_keys.hash", "=", s.keyHash)
    .where("api_keys.revoked_at", "is", null)
    .where((eb) => eb.or([eb("api_keys.expires_at", "is", null), eb("api_keys.expires_at", ">", s.now)]))
    .where(sql<string>`',' || api_keys.scopes || ','`, "like", sql.lit("%,read,%"));
}

/** Every filter but the time window, and (when asked) the keyset condition. */
function filtered(
  db: Kysely<Schema>,
  collection: Collection,
  order: ListOrder,
  s: Slots,
  withCursor: boolean,
  tenant: ArmsTenant["ref"],
): FilteredQuery {
  let q = db.selectFrom(collection.table as "withdrawals").where("tenant_id", "=", tenant);
  // A cursor in name (or code) order lies within the prefix's range, so it can be the range's
  // start; an engine that takes one lower bound per column must be given it alone.
  const cursorStarts = withCursor && s.afterKey !== undefined && !engineOf(db).combinesRangeBounds;
  if (s.nameLow !== undefined && !(cursorStarts && order === "name")) q = q.where("name_key", ">=", s.nameLow);
  if (s.nameHigh !== undefined) q = q.where("name_key", "<", s.nameHigh);
  if (s.codeLow !== undefined && !(cursorStarts && order === "code")) q = q.where("code_key", ">=", s.codeLow);
  if (s.codeHigh !== undefined) q = q.where("code_key", "<", s.codeHigh);
  for (const relation of RELATIONS) {
    if (s[relation] !== undefined) q = q.where(RELATION_COLUMNS[relation], "=", s[relation]);
  }
  if (withCursor && s.afterKey !== undefined) {
    const { column, after } = ORDERS[order];
    q = q.where((eb) => eb(eb.refTuple(column, "id"), after, eb.tuple(s.afterKey, s.afterId)));
  }
  return q;
}
