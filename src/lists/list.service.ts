/**
 * One page of a record list: query parsed, cursor opened, rows fetched, next cursor made by
 * the shared pager (platform/pager.ts). The page is returned as JSON text (see toApiJson);
 * its shape is the route's documented schema.
 */
import type { Kysely } from "kysely";
import type { Collection } from "../collections/define.js";
import { toApiJson } from "../collections/record.js";
import { BoundedMap } from "../platform/bounded-map.js";
import type { CursorCodec, CursorPosition } from "../platform/cursor.js";
import { checkCursorTenant, openCursor, pageOf, type PagedList } from "../platform/pager.js";
import { engineOf } from "../storage/engine.js";
import type { Schema } from "../storage/schema.js";
import { parseListQuery, type ListQuery } from "./list.query.js";
import {
  bracketOf,
  bracketQuery,
  eventSpanQuery,
  lateRangeOf,
  lateRangeQuery,
  newestQuery,
  newestStored,
  pageQuery,
  sortedByName,
  tilesWindow,
  topsOf,
  topsQuery,
  weeksOf,
  windowKeysQuery,
  type WindowPlan,
} from "./list.repository.js";
import { listOrder, positionOf, type ListOrder, type ListRow } from "./list.shape.js";
import { idsAfter, windowKeys } from "./window-keys.js";
import {
  assumedLateRange,
  BRACKET_ARMS,
  byTops,
  lateProbes,
  NAME_FIRST_SHARE,
  needsLateRange as windowNeedsLateRange,
  readsRecent,
  shareOfSpan,
  spanOfWeeks,
  tiledArms,
  tilingKey,
  TOPS_ARMS,
  TOPS_FRESH_MS,
  WINDOW_KEYS_BOUND,
  windowValues,
  withinBracket,
  type Bracket,
  type EventSpan,
  type LateRange,
  type Tops,
} from "./window.js";

/** Whether the page reads late rows by bucket over a span it first narrows to the tenant's: only in createdAt order. */
export function needsLateRange(db: Kysely<Schema>, collection: Collection, query: ListQuery): boolean {
  return tilesWindow(collection, query) && listOrder(query) === "created" && windowNeedsLateRange(query, engineOf(db).armsPerQuery);
}

/**
 * How a walk of a window in name order reads its later pages, as its cursors carry it: by the
 * name index, or by the window's keys (window-keys.ts). The first page says which, and how it
 * read its own rows: the window's (`window-first`) or the name index's (`window-keys`).
 */
const WINDOW_FIRST = "window-first";
const WINDOW_KEYS = "window-keys";
const NAME_INDEX = "name-index";
const PICKED = [NAME_INDEX, WINDOW_FIRST, WINDOW_KEYS];
/** A walk in createdAt order whose pages read as the plain list's does (WindowPlan.recent), as its cursors carry it. */
const RECENT = "recent";

/**
 * Where a walk's late rows lie, as its cursors carry it in createdAt order: `late:<low>,<high>`
 * (LateRange), or `late:none`. A later page reads only rows below its cursor, and every such row
 * was stored before the first page's probe (createdAt rises in commit order), so the probe's
 * range holds for the whole walk.
 */
const LATE = "late:";

/**
 * A walk's bracket, as its cursors carry it after its plan: `;in:<above>,<below>`, `-` for
 * none (window.ts, Bracket).
 */
const IN = ";in:";

/** What a cursor carries of how its walk reads: the plan, and a bracket after it. */
function carriedBy(chosen: string | undefined): { plan: string | undefined; bracket: Bracket | undefined } {
  const at = chosen?.indexOf(IN) ?? -1;
  if (chosen === undefined || at < 0) return { plan: chosen, bracket: undefined };
  const [above, below] = chosen
    .slice(at + IN.length)
    .split(",")
    .map((n) => (n === "-" || n === undefined ? null : Number(n)));
  const valid = (n: number | null | undefined) => n === null || Number.isSafeInteger(n);
  const bracket = valid(above) && valid(below) ? { above: above ?? null, below: below ?? null } : undefined;
  return { plan: at === 0 ? undefined : chosen.slice(0, at), bracket };
}

function cursorOfBracket(plan: string | undefined, { above, below }: Bracket): string {
  return `${plan ?? ""}${IN}${above ?? "-"},${below ?? "-"}`;
}

function lateOfCursor(chosen: string | undefined): LateRange | null | undefined {
  if (chosen === `${LATE}none`) return null;
  const match = chosen === undefined ? null : /^late:(-?\d+),(-?\d+)$/.exec(chosen);
  return match === null ? undefined : { low: Number(match[1]), high: Number(match[2]) };
}

function cursorOfLate(late: LateRange | null): string {
  return late === null ? `${LATE}none` : `${LATE}${late.low},${late.high}`;
}

/**
 * How the page reads its window. In createdAt order: the tenant's late rows' range, when the
 * tiling needs it, found by one more query on a walk's first page, or assumed (the range last
 * found, or for a window that reaches the present its end) and checked by the page itself
 * (assumedLateRange). A window that needs no range is narrowed too when a range assumed costs
 * fewer probes than its own span's tiling, its check included (lateProbes): a tenant with few or
 * no late rows then reads none of the buckets where it has none. In name order: which plan the
 * walk takes, which its first page finds out in its own statement (choosingPage); a later page
 * by the window's keys asks keysPlan instead. No plan in name order needs the range, as none
 * reads in createdAt order. A page with no plan of its walk's (its first) whose window likely
 * holds a large share of its tenant's rows (nameIndexFirst) is read by the name index if its
 * probe agrees (WindowPlan.probeFirst), which skips the counts, or without the probe where its
 * walk's probe agreed in the last EVENT_SPAN_FRESH_MS (probesSeen); not one read by week (`byWeek`).
 * What a first page found, its cursors carry (`chosen`), so that every page of a walk reads by
 * one plan.
 */
export async function windowPlan(
  db: Kysely<Schema>,
  collection: Collection,
  keyHash: string,
  query: ListQuery,
  chosen?: string,
  byWeek = false,
): Promise<WindowPlan> {
  if (!tilesWindow(collection, query)) return {};
  if (listOrder(query) !== "created") {
    if (chosen === NAME_INDEX) return { byName: NAME_INDEX };
    return byWeek ? {} : nameIndexFirst(keyHash, collection, query);
  }
  const carried = lateOfCursor(chosen);
  if (carried !== undefined) return { late: carried };
  const seen = lateRangesSeen.get(seenKey(keyHash, collection));
  if (withinRange(query, seen)) return {};
  const now = Date.now();
  // The window's own span where it needs no range, then the ranges its page can assume: by the
  // range seen, and by its own end where it reaches the present. The first of the cheapest wins.
  const plans: WindowPlan[] = needsLateRange(db, collection, query) ? [] : [{}];
  for (const from of seen === undefined ? [undefined] : [seen, undefined]) {
    const late = assumedLateRange(query, now, from);
    if (late !== undefined) plans.push({ late, assumed: true });
  }
  const cost = (plan: WindowPlan) => lateProbes(query, plan.late, plan.assumed === true);
  const [cheapest] = plans.sort((a, b) => cost(a) - cost(b));
  return cheapest ?? probedPlan(db, collection, keyHash);
}

/**
 * Finds the key's tenant's late rows' range in the background, for later walks to narrow their
 * windows by (windowPlan), when none was seen: once the key's page has shown the key good, and
 * once at a time. The walk that asks does not wait for it.
 */
function learnLateRange(db: Kysely<Schema>, collection: Collection, keyHash: string): void {
  const key = seenKey(keyHash, collection);
  if (!lateRangesSeen.has(key)) inBackground(`late:${key}`, () => probedPlan(db, collection, keyHash));
}

/** Runs `find` without waiting for it, once at a time for each `task`; a failure is left for a later page to try again. */
function inBackground(task: string, find: () => Promise<unknown>): void {
  if (learning.has(task)) return;
  learning.add(task);
  find()
    .catch(() => undefined)
    .finally(() => learning.delete(task));
}

const learning = new Set<string>();

/** The tenant's late rows' range as a query finds it now, for a walk's first page; kept as seen. */
export async function probedPlan(db: Kysely<Schema>, collection: Collection, keyHash: string): Promise<WindowPlan> {
  const found = lateRangeOf((await db.executeQuery(lateRangeQuery(db, collection, keyHash))).rows[0]);
  if (found.late !== undefined) lateRangesSeen.set(seenKey(keyHash, collection), found.late);
  return found;
}

/**
 * The late rows' range that each key's list was last found to hold (by key hash and list; null:
 * none), kept to skip the probe. A window within it would be narrowed to itself, so a walk of
 * it tiles its own span at once: right whatever the tenant's late rows, so a range seen however
 * long ago never makes a page miss one. Any other window's first page assumes it
 * (assumedLateRange) and checks it in its own statement, and is read again after a probe when a
 * late row lies outside.
 */
const lateRangesSeen = new BoundedMap<string, LateRange | null>(10_000);
const seenKey = (keyHash: string, collection: Collection) => `${keyHash}:${collection.name}`;

function withinRange({ since, until }: ListQuery, range: LateRange | null | undefined): boolean {
  return range !== undefined && range !== null && since !== undefined && until !== undefined && since >= range.low && until <= range.high;
}

/**
 * The event dates that each key's list was last found to span (null: none), and when, kept as a
 * hint of the share of its rows a window in name order holds (WindowPlan.probeFirst): a page
 * checks the share in its own statement, so a span however old never makes it miss a row. It
 * is found again in the background once EVENT_SPAN_FRESH_MS old, as the list grows.
 */
const eventSpansSeen = new BoundedMap<string, { span: EventSpan | null; foundAt: number }>(10_000);
export const EVENT_SPAN_FRESH_MS = 60_000;

/**
 * Finds the event dates the key's list spans in the background, for a window in name order's
 * later walks (windowPlan), when none was found in the last EVENT_SPAN_FRESH_MS: once the key's
 * page has shown the key good, and once at a time. The walk that asks does not wait for it.
 */
function learnEventSpan(db: Kysely<Schema>, collection: Collection, keyHash: string): void {
  const key = seenKey(keyHash, collection);
  const seen = eventSpansSeen.get(key);
  if (seen === undefined || Date.now() - seen.foundAt >= EVENT_SPAN_FRESH_MS)
    inBackground(`span:${key}`, () => foundEventSpan(db, collection, keyHash));
}

/** The event dates the key's list spans as a query finds them now (null: none), kept as seen. */
export async function foundEventSpan(db: Kysely<Schema>, collection: Collection, keyHash: string): Promise<EventSpan | null> {
  const row = (await db.executeQuery(eventSpanQuery(db, collection, keyHash))).rows[0];
  const span = row === undefined || row.low === null || row.high === null ? null : spanOfWeeks(Number(row.low), Number(row.high));
  eventSpansSeen.set(seenKey(keyHash, collection), { span, foundAt: Date.now() });
  return span;
}

/**
 * How a window in name order's first page is read when it covers at least 1 / NAME_FIRST_SHARE
 * of the event dates its tenant's rows were last found to span (eventSpansSeen): by the name
 * index, after its probe (`probeFirst`), or without it where its walk's probe agreed in the last
 * EVENT_SPAN_FRESH_MS, as the walk's later pages are read; by the statement that picks where
 * that probe turned a page away, and for a narrower window. The probe only spares a page that
 * the name index would serve from too many entries: a page read without it holds the same rows.
 */
function nameIndexFirst(keyHash: string, collection: Collection, query: ListQuery): WindowPlan {
  const span = eventSpansSeen.get(seenKey(keyHash, collection))?.span;
  if (span === undefined || span === null || shareOfSpan(query, span) < 1 / NAME_FIRST_SHARE) return {};
  const seen = probesSeen.get(walkOf(keyHash, collection, query));
  if (seen === undefined || Date.now() - seen.at >= EVENT_SPAN_FRESH_MS) return { probeFirst: true };
  return seen.agreed ? { byName: NAME_INDEX } : {};
}

/**
 * What each walk's (walkOf) last page by the name index first showed, and when: whether its
 * probe agreed (the page held a row), or turned it away (its rows spread unevenly, the window's
 * first names lying outside it, or its window holds none of the name). For EVENT_SPAN_FRESH_MS
 * its first pages then read by the name index without the probe, or pick (choosingPage) rather
 * than pay both statements.
 */
const probesSeen = new BoundedMap<string, { agreed: boolean; at: number }>(10_000);

/** What a walk's window keys are kept by: the reader's key, the list, the window and the name. */
const walkOf = (keyHash: string, collection: Collection, query: ListQuery) =>
  [keyHash, collection.name, query.since, query.until, query.name].join("|");

/**
 * The KeysPage of a walk's later page in name order that reads its window's keys (read now if
 * this process has none kept), or the name index when the window has too many rows to keep
 * their keys (WINDOW_KEYS_BOUND).
 */
async function keysPlan(
  db: Kysely<Schema>,
  collection: Collection,
  keyHash: string,
  query: ListQuery,
  position: CursorPosition,
): Promise<WindowPlan> {
  const walk = walkOf(keyHash, collection, query);
  const now = Date.now();
  let keys = windowKeys.get(walk, now);
  if (keys === undefined) {
    // As of the tenant's newest row: the rows stored since are the page's to read.
    const newest = newestStored((await db.executeQuery(newestQuery(db, collection, keyHash))).rows[0]);
    const read = newest === null ? undefined : (await db.executeQuery(windowKeysQuery(db, collection, keyHash, query, newest))).rows[0];
    // A window of more rows than WINDOW_KEYS_BOUND is the name index's, as is one read as empty (a key no good).
    if (newest === null || read === undefined || Number(read.n) === 0 || Number(read.n) > WINDOW_KEYS_BOUND) {
      windowKeys.delete(walk);
      return { byName: NAME_INDEX };
    }
    const pairs = typeof read.keys === "string" ? (JSON.parse(read.keys) as [string, string][]) : (read.keys ?? []);
    keys = { newest, names: pairs.map((p) => p[0]), ids: pairs.map((p) => p[1]), readAt: now };
    windowKeys.set(walk, keys);
  }
  return { byName: { ids: idsAfter(keys, position, query.limit + 1), newest: keys.newest } };
}

/**
 * The bracket of a walk of a window in createdAt order whose tiling takes at least BRACKET_ARMS
 * arms, found from where its tenant's late rows lie (the range its cursor carries, or else the
 * one last seen); undefined for any other walk, or when that range is not known.
 */
async function findBracket(
  db: Kysely<Schema>,
  collection: Collection,
  keyHash: string,
  query: ListQuery,
  plan: WindowPlan,
): Promise<Bracket | undefined> {
  if (tiledArms(query, plan.late) < BRACKET_ARMS) return undefined;
  const late = plan.late ?? lateRangesSeen.get(seenKey(keyHash, collection));
  const statement = late === undefined || late === null ? undefined : bracketQuery(db, collection, keyHash, query, late);
  if (statement === null) return { above: null, below: null };
  return statement === undefined ? undefined : bracketOf((await db.executeQuery(statement)).rows[0]);
}

/**
 * The tops of each key's window tilings (window.ts, Tops; by key hash, list and tiling), and
 * when they were found: they hold for good, but a page by them reads the late rows stored since
 * (its check), so they are found again once TOPS_FRESH_MS old.
 */
const topsSeen = new BoundedMap<string, { tops: Tops; foundAt: number }>(1000);
const topsKey = (keyHash: string, collection: Collection, query: ListQuery, late: LateRange | null | undefined) =>
  `${keyHash}:${collection.name}:${tilingKey(query, late)}`;

/** Whether a walk's first page in createdAt order reads its late rows by a tiling of at least TOPS_ARMS arms. */
function tilesFirstPage(collection: Collection, query: ListQuery, plan: WindowPlan, position: CursorPosition | undefined): boolean {
  return (
    position === undefined &&
    listOrder(query) === "created" &&
    tilesWindow(collection, query) &&
    plan.recent !== true &&
    tiledArms(query, plan.late) >= TOPS_ARMS
  );
}

/**
 * A first page's plan by its tiling's tops, when this process has them and they leave arms out,
 * with the newest createdAt of the arms they leave out (which the page's last row must lie above).
 */
function byTopsSeen(
  collection: Collection,
  keyHash: string,
  query: ListQuery,
  plan: WindowPlan,
): { plan: WindowPlan; leftOut: number | null } | undefined {
  const seen = topsSeen.get(topsKey(keyHash, collection, query, plan.late));
  const kept = seen === undefined ? undefined : byTops(seen.tops, () => windowValues(query, true, plan.late));
  return kept === undefined || seen === undefined ? undefined : { plan: { ...plan, tops: seen.tops }, leftOut: kept.leftOut };
}

/** Finds a window tiling's tops in the background, when none are kept or they are TOPS_FRESH_MS old (or `stale`), once at a time. */
function learnTops(
  db: Kysely<Schema>,
  collection: Collection,
  keyHash: string,
  query: ListQuery,
  late: LateRange | null | undefined,
  stale = false,
): void {
  const key = topsKey(keyHash, collection, query, late);
  const seen = topsSeen.get(key);
  if (!stale && seen !== undefined && Date.now() - seen.foundAt < TOPS_FRESH_MS) return;
  inBackground(`tops:${key}`, async () => {
    const statement = topsQuery(db, collection, keyHash, query, late);
    const tops = statement === undefined ? undefined : topsOf((await db.executeQuery(statement)).rows[0], query, late);
    if (tops === undefined) topsSeen.delete(key);
    else topsSeen.set(key, { tops, foundAt: Date.now() });
  });
}

/**
 * Whether a page read with arms left out holds every row it should: `take` rows, the last above
 * `above` (null: any), the newest createdAt that an arm left out can hold (its bracket's `above`,
 * or the newest of the buckets that its tops left out).
 */
function wholeAbove(rows: readonly ListRow[], take: number, above: number | null): boolean {
  return above === null || (rows.length === take && Number(rows[take - 1]?.created_at) > above);
}

/** What a page's cursor carries of how it was read, for the next page to read by too. */
function cursorPlan(plan: WindowPlan, order: ListOrder, picked: unknown): string | undefined {
  const chosen = chosenPlan(plan, order, picked);
  return plan.bracket === undefined ? chosen : cursorOfBracket(chosen, plan.bracket);
}

function chosenPlan(plan: WindowPlan, order: ListOrder, picked: unknown): string | undefined {
  if (picked !== undefined) return PICKED[Number(picked)];
  if (plan.probeFirst === true) return NAME_INDEX;
  if (plan.recent === true) return RECENT;
  if (plan.byName !== undefined) return plan.byName === NAME_INDEX ? NAME_INDEX : WINDOW_KEYS;
  return order === "created" && plan.late !== undefined ? cursorOfLate(plan.late) : undefined;
}

/** Who asks for a page: the hash of a well-formed key, and the full key check. */
export interface PageReader {
  keyHash: string;
  /** The key's tenant, or a 401 or 403: see `authenticate`. */
  tenantOfKey(): Promise<number>;
}

/**
 * The page the query string asks for. The page query finds the tenant from the key itself, so
 * a page costs one round trip to the database. A 401 or 403 still comes before any 400, and
 * when the query returns no row (a bad key, or an empty page) the key is checked on its own.
 */
export async function listPage(
  db: Kysely<Schema>,
  cursors: CursorCodec,
  collection: Collection,
  reader: PageReader,
  queryString: string,
): Promise<string> {
  let query, opened;
  try {
    query = parseListQuery(collection, queryString);
    opened = query.cursor === undefined ? undefined : openCursor(cursors, query.cursor, collection.name, query.filterKey);
  } catch (error) {
    await reader.tenantOfKey();
    throw error;
  }
  const position = opened?.position;
  const carried = carriedBy(opened?.plan);
  // One instant for the page: whether its window is read by week depends on it (weekValues).
  const now = Date.now();
  const weeks = weeksOf(collection, query, now);
  // A later page of a walk by its window's keys reads them, unless the window is now read by week
  // (a cursor made before that plan was, or a walk whose weeks had a row past them: see below).
  const carriesKeys =
    position !== undefined && (carried.plan === WINDOW_FIRST || carried.plan === WINDOW_KEYS) && tilesWindow(collection, query);
  const keysOf = (at: CursorPosition) => keysPlan(db, collection, reader.keyHash, query, at);
  // A window that reaches the present reads its walk's pages as the plain list's, until the
  // rows stored last hold too few of it (WindowPlan.recent).
  const order = listOrder(query);
  const recent =
    order === "created" && tilesWindow(collection, query) && readsRecent(query, now) && (opened === undefined || carried.plan === RECENT);
  let plan = recent
    ? { recent }
    : carriesKeys && weeks === undefined
      ? await keysOf(position)
      : await windowPlan(db, collection, reader.keyHash, query, carried.plan, weeks !== undefined);
  const readPage = async (by = plan) => {
    const read = await db.executeQuery(pageQuery(db, collection, reader.keyHash, query, position, query.limit + 1, by, now));
    return typeof by.byName === "object" ? { rows: sortedByName([...read.rows], query.limit + 1) } : read;
  };
  // A later page of a wide window in createdAt order reads its late rows as one arm where its
  // walk's bracket allows (WindowPlan.bracket); one that lacks a row so is read by the tiling.
  // A page that assumed where the late rows lie checks that by its tiling, so it is read so.
  if (order === "created" && position !== undefined && tilesWindow(collection, query) && plan.recent !== true) {
    const assumed = plan.assumed === true;
    const bracket = carried.bracket ?? (assumed ? undefined : await findBracket(db, collection, reader.keyHash, query, plan));
    if (bracket !== undefined) plan = { ...plan, bracket, byCreated: !assumed && withinBracket(bracket, Number(position.key)) };
  }
  // A walk's first page of a wide window reads by its tiling's tops where this process has them;
  // one that lacks a row so is read by the whole tiling.
  const tiledFirst = tilesFirstPage(collection, query, plan, position);
  const topped = tiledFirst ? byTopsSeen(collection, reader.keyHash, query, plan) : undefined;
  if (topped !== undefined) plan = topped.plan;
  let { rows } = await readPage();
  let staleTops = false;
  if (topped !== undefined && (rows.length === 0 || !wholeAbove(rows, query.limit + 1, topped.leftOut))) {
    const byTopsRows = rows;
    plan = { ...plan, tops: undefined };
    ({ rows } = await readPage());
    staleTops = rows.length !== byTopsRows.length || rows.some((row, i) => row.id !== byTopsRows[i]?.id);
  }
  if (plan.byCreated === true && !wholeAbove(rows, query.limit + 1, plan.bracket?.above ?? null)) {
    plan = { ...plan, byCreated: false };
    ({ rows } = await readPage());
  }
  // Read as the plain list's, a page whose bound stopped it short of `limit + 1` rows of the
  // window (the rows stored last lie outside it: recentPage) is read by its tiling.
  if (plan.recent === true && rows.some((row) => row.recent_more !== null && row.recent_more !== undefined)) {
    plan = await windowPlan(db, collection, reader.keyHash, query);
    ({ rows } = await readPage());
  }
  // A page by week of a window open at its end holds none when the tenant has a row past its
  // weeks (a device's clock ahead), or when its window is empty: it is read as a wider window's
  // page is, by the plan its cursor carries, or on a walk's first page by the plan it chooses.
  if (rows.length === 0 && weeks?.pastWeek !== undefined && plan.notByWeek !== true) {
    plan = { ...(carriesKeys ? await keysOf(position) : plan), notByWeek: true };
    ({ rows } = await readPage());
  }
  // A page by the name index that its probe did not show the window a share for holds none (as
  // does one whose window holds none): it is read by the statement that picks.
  if (plan.probeFirst === true) probesSeen.set(walkOf(reader.keyHash, collection, query), { agreed: rows.length > 0, at: Date.now() });
  if (rows.length === 0 && plan.probeFirst === true) {
    plan = { ...plan, probeFirst: false };
    ({ rows } = await readPage());
  }
  // A page that assumed where the late rows lie holds none when one lies outside that (or when
  // its window is empty): it is read again by the range a query finds. A later page from its
  // window's keys, which always holds a row (the one that showed the page to come), holds none
  // when too many late rows were stored since (keysPage) or when the key is no good: it is read
  // by the name index, and the next page reads the keys again.
  if (rows.length === 0 && plan.assumed === true) {
    plan = await probedPlan(db, collection, reader.keyHash);
    ({ rows } = await readPage());
  } else if (rows.length === 0 && typeof plan.byName === "object") {
    windowKeys.delete(walkOf(reader.keyHash, collection, query));
    ({ rows } = await readPage({ byName: NAME_INDEX, notByWeek: plan.notByWeek }));
  }
  // A walk's first page in name order chose its plan in its own statement (choosingPage).
  const picked = rows[0]?.window_first;
  const tenantId = rows[0]?.tenant_id ?? (await reader.tenantOfKey());
  if (opened !== undefined) checkCursorTenant(opened, tenantId);
  if (order === "created" && tilesWindow(collection, query)) learnLateRange(db, collection, reader.keyHash);
  if (tiledFirst && tilesFirstPage(collection, query, plan, position))
    learnTops(db, collection, reader.keyHash, query, plan.late, staleTops);
  if (order === "name" && (picked !== undefined || plan.probeFirst === true)) learnEventSpan(db, collection, reader.keyHash);
  const paged: PagedList<ListRow> = {
    list: collection.name,
    filterKey: query.filterKey,
    positionOf: (row) => positionOf(row, order),
    plan: cursorPlan(plan, order, picked),
  };
  const page = pageOf(cursors, tenantId, paged, rows, query.limit);
  const cursor = page.cursor === null ? "null" : JSON.stringify(page.cursor);
  return `{"data":[${page.rows.map((row) => toApiJson(collection, row)).join(",")}],"cursor":${cursor}}`;
}
