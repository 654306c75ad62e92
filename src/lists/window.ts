/**
 * The time window filters on the event date but keeps the newest-first order, by createdAt:
 * two columns, so no one index range serves it. Instead every row is read from an index that
 * is already in createdAt order, and the arms are merged, stopping when the page is full:
 * - Arm A, rows stored within SLACK of their event (late_event_at null): their createdAt lies
 *   within the window widened by SLACK on each side, so one range of the index of on-time rows
 *   finds them, the event date checked on the index entry.
 * - The late rows, from their indexes by bucket of the event date (collections/late-event.ts):
 *   the window is tiled by whole buckets, the largest that fit, and each bucket is an arm in
 *   createdAt order. Only the buckets at the window's ends, when not whole, check the event
 *   date, on the index entry: of eight hours (EDGE_LEVEL), the smallest indexed.
 *   A window that is open-ended or would take many arms is first narrowed to the event dates
 *   of the tenant's late rows (LateRange); past them the buckets may reach beyond the window,
 *   as no late row lies there.
 * A window in name order that spans at most NAME_WEEK_ARMS weeks of event dates (up to a day
 * from now, when open at its end) is read from the index of rows by event week and name (0015),
 * one arm a week in name order, merged, the weeks at its ends checking the event date on the
 * entries (weekValues). Any other
 * window in name order picks on its first page between the name index and the window's own rows
 * (list.repository.ts, choosingPage), which read the late rows instead as one range of the
 * 8-hour level's index (lateRowsArm), and need neither tiling nor narrowing.
 * Late rows whose event dates span decades would take more arms than MAX_LATE_ARMS: they are
 * read as one arm in createdAt order instead, the event date checked on each row. So are a wide
 * window's late rows on a later page that lies between the late rows of other dates (Bracket).
 * A wide window's first page reads only the arms that can hold one of its rows (Tops).
 * The arms are disjoint and hold only rows of the window, but for what the two edges turn away
 * on their index entries, whatever its width and however late its rows were stored, so a page
 * reads about `take` rows plus one seek per arm (and, once in a walk for each edge, up to its
 * eight hours of other late rows as index entries).
 */
import { sql, type SelectQueryBuilder } from "kysely";
import { BUCKET_LEVELS_MS, BUCKET_ORIGIN_MS, SLACK_MS } from "../collections/late-event.js";
import { BoundedMap } from "../platform/bounded-map.js";
import type { CursorPosition } from "../platform/cursor.js";
import type { Slots } from "../storage/query-template.js";
import type { Schema } from "../storage/schema.js";
import { MAX_LIMIT } from "../platform/query-string.js";
import type { ListQuery } from "./list.query.js";

/** A query of one record table, whatever it selects: the window's arms only add conditions to it. */
type TableQuery<O> = SelectQueryBuilder<Schema, "withdrawals", O>;

/**
 * The level of the buckets at either end of a window, and the smallest with an index (0011
 * dropped the hour's): an edge reads at most one such bucket of late rows outside the window
 * (which a walk whose rows were stored in the order of their events reads on one page), and
 * saves the hours' arms, up to seven a side. It keeps the event date on its entries (0010).
 */
export const EDGE_LEVEL = 1;
const EDGE_MS = BUCKET_LEVELS_MS[EDGE_LEVEL] ?? 28_800_000;
/**
 * A window in name order is read one of two ways: the name index in name order, the event
 * date checked on each entry (about `limit / share` entries a page, the share being the
 * window's part of the tenant's rows), or the window's own rows by its two unordered arms
 * (unorderedValues), sorted by name (every row of the window, every page). The second is
 * taken when a bounded count finds at most this many rows in the window: the sort stays small,
 * and a window with more rows is a large enough share that the name index finds a page soon.
 */
export const WINDOW_FIRST_BOUND = 5_000;
/**
 * A window that does not fit in one page: before it counts further, a walk's first page in name
 * order reads NAME_PROBE_PAGES pages' worth of the name index's entries. When they hold enough
 * of the window's rows to show it a share of at least 1 / NAME_INDEX_PAGES of them, the name
 * index serves each page from about NAME_INDEX_PAGES pages' worth of entries or fewer, and the
 * window is not counted: a window that large a share of a tenant's rows is, but for small
 * tenants, larger than reading that many entries.
 */
export const NAME_PROBE_PAGES = 20;
export const NAME_INDEX_PAGES = 80;
/**
 * A bounded window whose tenant's rows span more than this many times its width skips that
 * probe: spread evenly, it holds less than 1 / SPAN_SHARE of them, too small a share for the
 * name index (NAME_INDEX_PAGES, with room for rows spread unevenly).
 */
export const SPAN_SHARE = 2 * NAME_INDEX_PAGES;
/**
 * A walk in name order whose window the name index serves slowly reads its later pages from
 * the window's keys instead (lists/window-keys.ts): the ids and names of the window's rows in
 * the page's name range, sorted once, read from at most this many of the window's index
 * entries (a window with more is left to the name index). A walk is taken so when its first
 * page read the window's own rows; when the name index served it, for a bounded window that
 * the tenant's rows span more than KEYS_SHARE times over (spread evenly, less than 1 /
 * KEYS_SHARE of them: the name index reads that many pages' worth of entries a page or more),
 * on an engine where that pays (Engine.keysForSmallShares); and when the count found it more
 * than WINDOW_FIRST_BOUND rows.
 */
export const WINDOW_KEYS_BOUND = 20_000;
export const KEYS_SHARE = 20;
const TOP = BUCKET_LEVELS_MS.length - 1;

/**
 * A late row's bucket at a level, as the indexes write it (0016): the divisor is a literal, never
 * a parameter, and the bucket a 4-byte integer, which every event date's is.
 */
export const bucketOf = (level: number) =>
  sql<number>`cast((late_event_at + ${sql.lit(BUCKET_ORIGIN_MS)}) / ${sql.lit(BUCKET_LEVELS_MS[level] ?? EDGE_MS)} as integer)`;

/**
 * A number compared with a bucket or a week, kept within a 4-byte integer, as PostgreSQL takes
 * it: the bounds that lie beyond any event date (an open end, a span far past the window) may
 * not, and every bucket and week of a row lies well within.
 */
const asInteger = (n: number) => Math.min(2 ** 31 - 1, Math.max(-(2 ** 31), n));

/** The bucket of an event date at a level. */
const bucketAt = (level: number, ms: number) => asInteger(Math.floor((ms + BUCKET_ORIGIN_MS) / (BUCKET_LEVELS_MS[level] ?? EDGE_MS)));

/** One bucket of a tiling; an edge lies only partly in the window, where late rows may lie outside it. */
export interface Tile {
  level: number;
  bucket: number;
  edge: boolean;
}

/** The inclusive range of event dates that the late rows of a tenant's list fall in. */
export interface LateRange {
  low: number;
  high: number;
}

/**
 * The buckets that tile the event dates from `low` to `high` (inclusive, milliseconds): each
 * the largest that fits where it starts, within `outer` (a range around them that holds no
 * late row outside the window, so that a bucket may reach into it unchecked), and at either
 * end a bucket of the edge level that lies only partly inside `outer`, which checks the event
 * date. It stops once past `most` tiles: a caller that takes no more learns that there are more.
 */
export function tiles(low: number, high: number, outer: [number, number] = [low, high], most = Infinity): Tile[] {
  if (high < low) return [];
  const [outerLow, outerHigh] = outer;
  const startOf = (level: number, bucket: number) => bucket * (BUCKET_LEVELS_MS[level] ?? EDGE_MS) - BUCKET_ORIGIN_MS;
  const fits = (level: number, bucket: number) => startOf(level, bucket) >= outerLow && startOf(level, bucket + 1) - 1 <= outerHigh;
  // Buckets are counted in the edge level's (`unit`); a bucket of `level` spans 8 ** (level - EDGE_LEVEL) of them.
  const first = bucketAt(EDGE_LEVEL, low);
  const last = bucketAt(EDGE_LEVEL, high);
  if (first === last) return [{ level: EDGE_LEVEL, bucket: first, edge: !fits(EDGE_LEVEL, first) }];
  const out: Tile[] = [];
  let unit = first;
  let end = last;
  if (!fits(EDGE_LEVEL, first)) {
    out.push({ level: EDGE_LEVEL, bucket: first, edge: true });
    unit += 1;
  }
  if (!fits(EDGE_LEVEL, last)) {
    out.push({ level: EDGE_LEVEL, bucket: last, edge: true });
    end -= 1;
  }
  // A bucket may start before `unit` only where no tile lies before it, and end after `end` only where none lies after.
  const ceiling = end === last ? Infinity : end;
  while (unit <= end && out.length <= most) {
    let level = TOP;
    for (; level > EDGE_LEVEL; level -= 1) {
      const size = 8 ** (level - EDGE_LEVEL);
      const bucket = Math.floor(unit / size);
      if ((bucket * size === unit || unit === first) && (bucket + 1) * size - 1 <= ceiling && fits(level, bucket)) break;
    }
    const size = 8 ** (level - EDGE_LEVEL);
    const bucket = Math.floor(unit / size);
    out.push({ level, bucket, edge: false });
    unit = (bucket + 1) * size;
  }
  return out;
}

/**
 * Whether a window's late rows must first be narrowed to the tenant's (see LateRange): when it
 * is open-ended, and when its tiling would take more arms than a query to narrow it costs
 * (`armsPerQuery`, the engine's).
 */
export function needsLateRange(query: ListQuery, armsPerQuery: number): boolean {
  const { since, until } = query;
  if (since === undefined && until === undefined) return false;
  if (since === undefined || until === undefined) return true;
  return tiledArms(query, undefined) > armsPerQuery;
}

/**
 * The event dates a window's late arms must cover (the window, within the tenant's late rows
 * when known), and how far their buckets may reach: past a side of the window beyond which the
 * tenant has no late row.
 */
function lateSpan(
  { since, until }: Pick<ListQuery, "since" | "until">,
  late: LateRange | null | undefined,
): [number, number, [number, number]] | undefined {
  if (late === null) return undefined;
  const low = Math.max(since ?? -Infinity, late?.low ?? -Infinity);
  const high = Math.min(until ?? Infinity, late?.high ?? Infinity);
  if (!Number.isFinite(low) || !Number.isFinite(high)) return undefined;
  const outer: [number, number] = [
    late !== undefined && (since ?? -Infinity) <= late.low ? -Infinity : low,
    late !== undefined && (until ?? Infinity) >= late.high ? Infinity : high,
  ];
  return [low, high, outer];
}

/**
 * The window's values: its bounds, arm A's createdAt range around them and, for a page that
 * reads late rows by bucket (`tiled`), a bucket per late arm, named by its level and whether it
 * is an edge (`b2_5`, `e0_1`): which names are present is the query's shape. `late` narrows the
 * tiling (undefined: not needed; null: no late rows).
 */
export function windowValues(query: ListQuery, tiled: boolean, late?: LateRange | null): Readonly<Record<string, number>> {
  if (!tiled) return boundValues(query);
  if (late === undefined && (query.since === undefined) !== (query.until === undefined))
    throw new Error("this window's late rows need their range (lateRangeQuery) first");
  return tilingOf(query, late).values;
}

/** The window's bounds, and arm A's createdAt range around them. */
function boundValues({ since, until }: Pick<ListQuery, "since" | "until">): Record<string, number> {
  const values: Record<string, number> = {};
  if (since !== undefined) Object.assign(values, { since, sinceLower: since - SLACK_MS });
  if (until !== undefined) Object.assign(values, { until, untilUpper: until + SLACK_MS });
  return values;
}

/**
 * The most arms a window's late rows are tiled by. Late rows whose event dates span decades (a
 * device whose clock was reset to 1970, a year typed wrong) would take more, each one planned,
 * and SQLite allows at most 500 in a statement: such a window reads its late rows instead as one
 * arm, the late rows by createdAt with the event date checked on each (lateByCreatedArm), which
 * costs a page about `take` entries over the window's share of the late rows it passes.
 */
export const MAX_LATE_ARMS = 100;

/**
 * A window's tiling by a late range, kept by tilingKey: a walk asks for the same on every page.
 * Working it out again was a third of a page query's making, and copying its dozens of names into
 * a new object for each page was the one function of the window's in its first page's CPU profile
 * (docs/measurements.md). `values` are windowValues', shared, so read-only; `arms`, the index
 * probes its late arms cost: more than any tiling for the one arm that replaces too many.
 */
interface Tiling {
  values: Readonly<Record<string, number>>;
  arms: number;
}

const tilings = new BoundedMap<string, Tiling>(1000);

/** What names a window's tiling by a late range (undefined: its own span), for what is kept of it. */
export function tilingKey({ since, until }: Pick<ListQuery, "since" | "until">, late: LateRange | null | undefined): string {
  return `${since}|${until}|${late === undefined ? "" : late === null ? "none" : `${late.low},${late.high}`}`;
}

/** The window's tiling by `late`: its bounds' values and a bucket per late arm, named as windowValues names them. */
function tilingOf({ since, until }: Pick<ListQuery, "since" | "until">, late: LateRange | null | undefined): Tiling {
  const key = tilingKey({ since, until }, late);
  let tiling = tilings.get(key);
  if (tiling === undefined) {
    const named: Record<string, number> = {};
    const span = lateSpan({ since, until }, late);
    const tiled = span === undefined ? [] : tiles(...span, MAX_LATE_ARMS);
    if (tiled.length > MAX_LATE_ARMS) named.lateByCreatedAt = 1;
    else tiled.forEach((tile, i) => (named[`${tile.edge ? "e" : "b"}${tile.level}_${i}`] = tile.bucket));
    const arms = named.lateByCreatedAt === undefined ? Object.keys(named).length : MAX_LATE_ARMS + 1;
    tiling = { values: { ...boundValues({ since, until }), ...named }, arms };
    tilings.set(key, tiling);
  }
  return tiling;
}

/**
 * The window's late arms, from its values' names (or its slots'): each tile's level, its
 * bucket's value or slot and whether it is an edge; those named after `prefix` (a bracket's side).
 */
export function lateTiles<T>(s: Readonly<Record<string, T>>, prefix = ""): { name: string; level: number; slot: T; edge: boolean }[] {
  return Object.keys(s).flatMap((name) => {
    const match = name.startsWith(prefix) ? /^([be])(\d)_\d+$/.exec(name.slice(prefix.length)) : null;
    return match === null ? [] : [{ name, level: Number(match[2]), slot: s[name] as T, edge: match[1] === "e" }];
  });
}

/** The earliest and latest instants a JavaScript date can hold: no event date lies outside them. */
const EARLIEST_MS = -8.64e15;
const LATEST_MS = 8.64e15;

/** How far past now a window that reaches the present assumes late rows may lie (assumedLateRange). */
const ASSUMED_AHEAD_MS = 24 * 60 * 60 * 1000;

/**
 * A range of late rows for a window's first page to tile by without first probing for it, or
 * undefined when it must probe. From the late rows' first event date seen (`seen`, a range
 * an earlier probe found), or else from the window's start; up to the latest seen, or for a
 * window that reaches the present (open at its end, or ending no earlier than SLACK_MS before
 * `now`) up to its end or the end of the 8-hour bucket a day from `now` (or from the latest seen,
 * if later), whichever is earlier. A row is late once stored more than SLACK_MS after its event,
 * so no late row lies past the present but for a device's wrong clock. The page checks in its
 * own statement that no late row lies outside the range (verifiedTenant), and holds no row when
 * one does. None when none was seen (`seen` null). Undefined for a window that neither reaches
 * the present nor has a range seen, for one open at its start without one, and for one that lies
 * wholly past the range.
 */
export function assumedLateRange(
  { since, until }: Pick<ListQuery, "since" | "until">,
  now: number,
  seen?: LateRange | null,
): LateRange | null | undefined {
  if (seen === null) return null;
  const reachesNow = reachesPresent({ until }, now);
  const low = seen?.low ?? (since === undefined ? undefined : EARLIEST_MS);
  if (low === undefined || (!reachesNow && seen === undefined)) return undefined;
  const ahead = bucketAt(EDGE_LEVEL, Math.max(now + ASSUMED_AHEAD_MS, seen?.high ?? -Infinity));
  const high = reachesNow ? Math.min(until ?? Infinity, (ahead + 1) * EDGE_MS - BUCKET_ORIGIN_MS - 1) : (seen?.high ?? -Infinity);
  return (since ?? -Infinity) > high ? undefined : { low, high };
}

/**
 * Whether a window reaches the present: open at its end, or ending no earlier than SLACK_MS
 * before `now`. No row but a device's wrong clock has a later event.
 */
export function reachesPresent({ until }: Pick<ListQuery, "until">, now: number): boolean {
  return until === undefined || until >= now - SLACK_MS;
}

/**
 * A page in createdAt order of a window that reaches the present reads first as the plain
 * list's page does, from at most this many pages' worth of its rows (after the cursor), keeping
 * those in the window (list.repository.ts, recentPage): the rows stored last are mostly of
 * recent events, so a page of the window lies among them, from two arms where a tiling of the
 * late rows starts one an arm of it. When fewer than the page's rows and one more are in the
 * window, and the list holds at least the bound's rows after the cursor, the page is read again
 * by its tiling (list.service.ts), and the walk's later pages by that. Only a window at least
 * RECENT_WIDTH_MS wide is read so (readsRecent): a narrower one, a poll of the last hours,
 * often holds less than a page, whose tiling takes few arms.
 */
export const RECENT_SCAN = 2;
export const RECENT_WIDTH_MS = 2 * 24 * 60 * 60 * 1000;

/** Whether a page in createdAt order of this window reads first as the plain list's (RECENT_SCAN). */
export function readsRecent(query: Pick<ListQuery, "since" | "until">, now: number): boolean {
  const { since, until } = query;
  return reachesPresent(query, now) && (since === undefined || (until ?? now) - since >= RECENT_WIDTH_MS);
}

/**
 * What a page's late rows cost to read by a range (undefined: the window's own span), in index
 * probes: one a late arm, and one for each end of a range assumed that its page checks
 * (assumedValues). The cheapest range is taken (list.service.ts).
 */
export function lateProbes(query: ListQuery, late: LateRange | null | undefined, assumed: boolean): number {
  const arms = tiledArms(query, late);
  if (!assumed || late === undefined) return arms;
  return arms + (late === null || late.low === EARLIEST_MS ? 1 : 2);
}

/**
 * The values of a page that checks that no late row lies outside the range it assumed
 * (assumedLateRange): its ends and their 8-hour buckets, the first only when it is a date. When
 * it assumed none, no late row may lie past the earliest date.
 */
export function assumedValues(late: LateRange | null): Record<string, number> {
  const { low, high } = late ?? { low: EARLIEST_MS, high: EARLIEST_MS };
  const values = { beyond: high, beyondBucket: bucketAt(EDGE_LEVEL, high) };
  return low === EARLIEST_MS ? values : { ...values, below: low, belowBucket: bucketAt(EDGE_LEVEL, low) };
}

/**
 * A window's values for a plan that reads its rows in no particular order (a window in name
 * order, and its count): its bounds, arm A's createdAt range, and the 8-hour buckets of its
 * bounds, between which lateRowsArm reads its late rows as one range. Unlike a tiling it needs
 * no narrowing, so no probe of where the tenant's late rows lie. An open end's bucket is the
 * last (or first) any date can have: a range bounded on both sides is one a planner without
 * the values (PostgreSQL's generic plans) still reckons narrow. A bounded window also gets the
 * dates beyond which a row of its tenant shows the window too small a share (spanValues).
 */
export function unorderedValues(query: ListQuery, now: number): Record<string, number> {
  const { since, until } = query;
  return {
    ...windowValues(query, false),
    lateLow: bucketAt(EDGE_LEVEL, since ?? EARLIEST_MS),
    lateHigh: bucketAt(EDGE_LEVEL, until ?? LATEST_MS),
    ...(since !== undefined && until !== undefined && spanValues(since, until, now)),
  };
}

/**
 * How far before and after a bounded window its tenant's rows would span too wide a range for
 * the name index (SPAN_SHARE). After it only when that lies before the day ahead of `now` past
 * which no row's date lies, but for a device's wrong clock (ASSUMED_AHEAD_MS): that side's
 * probes would find nothing.
 */
function spanValues(since: number, until: number, now: number): Record<string, number> {
  const values: Record<string, number> = {};
  // The same for the window's keys (KEYS_SHARE), named `keys...`.
  for (const [name, share] of [
    ["span", SPAN_SHARE],
    ["keys", KEYS_SHARE],
  ] as const) {
    const wide = (until - since) * share;
    Object.assign(values, { [`${name}Before`]: since - wide, [`${name}LateBefore`]: bucketAt(EDGE_LEVEL, since - wide) });
    if (until + wide <= now + ASSUMED_AHEAD_MS)
      Object.assign(values, { [`${name}After`]: until + wide, [`${name}LateAfter`]: bucketAt(EDGE_LEVEL, until + wide) });
  }
  return values;
}

/**
 * The window's late rows as one range of the 8-hour buckets' index, the event date checked on
 * each entry: in the index's order (bucket, then createdAt), not in createdAt order. It reads
 * the window's late rows and, at most, the other late rows of its two end buckets.
 */
export function lateRowsArm<O>(base: TableQuery<O>, s: Slots): TableQuery<O> {
  const bucket = bucketOf(EDGE_LEVEL);
  let arm = base.where(bucket, ">=", s.lateLow).where(bucket, "<=", s.lateHigh).where(bucket, "is not", null);
  if (s.since !== undefined) arm = arm.where("late_event_at", ">=", s.since);
  if (s.until !== undefined) arm = arm.where("late_event_at", "<=", s.until);
  return arm;
}

/** lateRowsArm in its index's order: what an engine reads by that index up to a limit. */
export function inLateRowsOrder<O>(arm: TableQuery<O>): TableQuery<O> {
  return arm.orderBy(bucketOf(EDGE_LEVEL)).orderBy("created_at").orderBy("id");
}

/**
 * The window's late rows as one arm in createdAt order, from the index of late rows by createdAt,
 * the event date checked on each row: for a tiling of more than MAX_LATE_ARMS arms, and for a
 * page between its window's bracket (Bracket), above `s.createdAbove` when set.
 */
export function lateByCreatedArm<O>(base: TableQuery<O>, s: Slots): TableQuery<O> {
  let arm = base.where("late_event_at", "is not", null);
  if (s.createdAbove !== undefined) arm = arm.where("created_at", ">", s.createdAbove);
  if (s.since !== undefined) arm = arm.where("late_event_at", ">=", s.since);
  if (s.until !== undefined) arm = arm.where("late_event_at", "<=", s.until);
  return arm;
}

/**
 * A walk in createdAt order of a window whose tiling takes at least this many arms reads its
 * later pages by its bracket (Bracket) where it can: two arms instead of the tiling's.
 */
export const BRACKET_ARMS = 8;

/**
 * Where in createdAt order the late rows of a window's walk lie among others (each null when
 * there is none): `above`, the newest createdAt of a late row dated before the window, and
 * `below`, the oldest of one dated after it. A late row stored between them is dated in the
 * window, so below `below` the window's late rows are read as one arm by createdAt
 * (lateByCreatedArm) that passes no other, and a page is whole when its rows reach no lower than
 * `above`. Each page checks the event date all the same: the bracket only makes a page cheap, and
 * a bracket found from a range gone stale (a late row stored since outside it) makes its arm read
 * a row it turns away, or its page read again by the tiling (list.service.ts).
 */
export interface Bracket {
  above: number | null;
  below: number | null;
}

/** How many arms a window's tiling takes by a late range (undefined: its own span), one arm for more than MAX_LATE_ARMS. */
export function tiledArms(query: ListQuery, late: LateRange | null | undefined): number {
  return tilingOf(query, late).arms;
}

/**
 * The values of the statement that finds a window's bracket from its tenant's late rows' range:
 * a bucket per arm of a tiling of the late rows dated before the window (`p...`, each giving its
 * newest createdAt) and after it (`q...`, its oldest), named as windowValues names a tiling's
 * (`pb2_0`, `qe1_3`), and the window's bounds, which the edges check. Undefined when the two
 * take more than MAX_LATE_ARMS arms.
 */
export function bracketValues({ since, until }: ListQuery, late: LateRange): Record<string, number> | undefined {
  const values: Record<string, number> = {};
  const name = (side: string) => (tile: Tile, i: number) => (values[`${side}${tile.edge ? "e" : "b"}${tile.level}_${i}`] = tile.bucket);
  // Beyond the late rows' range no late row lies, so the buckets may reach past it unchecked.
  if (since !== undefined && late.low < since) tiles(late.low, since - 1, [-Infinity, since - 1], MAX_LATE_ARMS).forEach(name("p"));
  if (until !== undefined && late.high > until) tiles(until + 1, late.high, [until + 1, Infinity], MAX_LATE_ARMS).forEach(name("q"));
  if (Object.keys(values).length > MAX_LATE_ARMS) return undefined;
  if (since !== undefined) values.since = since;
  if (until !== undefined) values.until = until;
  return values;
}

/** The arms of a bracket's statement, from its values' names (or its slots'): each tile's side, level, value or slot, and whether it is an edge. */
export function bracketTiles<T>(s: Readonly<Record<string, T>>): { side: "p" | "q"; level: number; slot: T; edge: boolean }[] {
  return (["p", "q"] as const).flatMap((side) => lateTiles(s, side).map((tile) => ({ side, ...tile })));
}

/** Whether a page after `key` (a createdAt) lies within a bracket: below its `below`, above its `above`. */
export function withinBracket({ above, below }: Bracket, key: number): boolean {
  return (below === null || key < below) && (above === null || key > above);
}

/**
 * A wide window's first page reads only the arms that can hold one of its rows, by what a
 * process last found of them (its tops): as of the newest createdAt of the tenant's late rows
 * then (`asOf`), each tile's newest createdAt and its TOPS_RANK-th newest (null: fewer), and
 * arm A's. Some arm's TOPS_RANK rows all lie at or above that arm's `ranked`, so a page of up to
 * TOPS_RANK rows reaches no lower than the highest `ranked` of any, and an arm whose newest lies
 * below that holds none of the page's rows (nor does one that held none). A row is never stored
 * below a createdAt already seen (createdAt rises in commit order) and a transaction's row never
 * changes, so that holds for every row stored by `asOf`. The statement that finds the tops
 * checks, as of `asOf`, that no late row lies outside the tiling's late range (as a page that
 * assumed it does: assumedValues), and a page by them that no late row stored since is dated
 * in the window, and that fewer than TOPS_RANK were stored since, which bounds what that reads
 * (verifiedTenant): no arm left out can then hold a row stored since, but arm A when its range
 * ends after `asOf`, which is never left out. The page also checks that its last row lies above
 * every arm it left out (list.service.ts). One that fails either is read again by the whole
 * tiling.
 */
export interface Tops {
  asOf: number;
  /** By a tile's value name (windowValues). */
  tiles: Readonly<Record<string, Top>>;
  /** Arm A's, whose rows all lie at or below `untilUpper`: left out only when that is no later than `asOf`. */
  onTime: Top;
}

/** An arm's newest createdAt, and its TOPS_RANK-th newest (each null when it holds fewer rows). */
export interface Top {
  newest: number | null;
  ranked: number | null;
}

/** The rank of a bucket's createdAt that tops keep: one more than the largest page, as a page reads one more row than it shows. */
export const TOPS_RANK = MAX_LIMIT + 1;
/** The fewest arms of a tiling whose first page reads by its tops: fewer save too little for its guard. */
export const TOPS_ARMS = 8;
/** How long a process keeps a tiling's tops before it finds them again, so that the late rows its guard reads stay few. */
export const TOPS_FRESH_MS = 60_000;

/** What byTops made of each tops: a page asks for the same on every request. */
const byTopsMade = new WeakMap<Tops, ReturnType<typeof byTops>>();

/**
 * The window values of a first page that reads by the tops, from its tiling's (`tiling`: the
 * windowValues of the tiling the tops were found for, asked for once a tops): the tiles that
 * can hold one of its rows (`onTimeLeftOut` when arm A cannot: its range ends by `asOf`, and its
 * newest lies below them), and `topsAsOf`; with `leftOut`, the newest createdAt of the arms left
 * out (null: none held a row), which the page's last row must lie above. Undefined when the tops
 * leave out too few arms to pay for the guard they add, or every arm (a window that held no row,
 * which its tiling reads at no more cost).
 */
export function byTops(
  tops: Tops,
  tiling: () => Readonly<Record<string, number>>,
): { values: Record<string, number>; leftOut: number | null } | undefined {
  if (byTopsMade.has(tops)) return byTopsMade.get(tops);
  const values = tiling();
  const tiled = lateTiles(values).map(({ name }) => ({ name, top: tops.tiles[name] }));
  // Arm A's rows are all stored by `untilUpper`: none comes after `asOf` once that is past.
  const onTimeDone = values.untilUpper !== undefined && values.untilUpper <= tops.asOf;
  const floor = Math.max(tops.onTime.ranked ?? -Infinity, ...tiled.map(({ top }) => top?.ranked ?? -Infinity));
  const holds = (top: Top | undefined) => top !== undefined && top.newest !== null && top.newest >= floor;
  const left = [...tiled.filter(({ top }) => !holds(top)), ...(onTimeDone && !holds(tops.onTime) ? [{ name: "", top: tops.onTime }] : [])];
  let made: ReturnType<typeof byTops>;
  // The page adds a guard: it must leave out more, and keep an arm. Tops of another tiling leave none.
  const keeps = tiled.length + 1 > left.length;
  if (left.length > 1 && keeps && tiled.every(({ top }) => top !== undefined)) {
    const kept: Record<string, number> = { ...values, topsAsOf: tops.asOf };
    for (const { name } of left)
      if (name === "") kept.onTimeLeftOut = 1;
      else delete kept[name];
    const newest = left.flatMap(({ top }) => (top?.newest === null || top?.newest === undefined ? [] : [top.newest]));
    made = { values: kept, leftOut: newest.length === 0 ? null : Math.max(...newest) };
  }
  byTopsMade.set(tops, made);
  return made;
}

/**
 * What ends arm A's createdAt range at the top: one bound, the tighter of the cursor and
 * `until + SLACK` (the other is then implied), so the range scan starts where the page does.
 */
export type ArmAUpperBound = "cursor" | "until" | "none";

export function armAUpperBound({ until }: ListQuery, after: CursorPosition | undefined): ArmAUpperBound {
  const untilUpper = until === undefined ? undefined : until + SLACK_MS;
  if (after !== undefined && (untilUpper === undefined || (after.key as number) <= untilUpper)) return "cursor";
  return untilUpper === undefined ? "none" : "until";
}

/** Arm A: rows stored within SLACK of their event, by a createdAt range around the window. */
export function onTimeArm<O>(base: TableQuery<O>, s: Slots, upper: ArmAUpperBound): TableQuery<O> {
  let arm = base.where("late_event_at", "is", null);
  if (upper === "until") arm = arm.where("created_at", "<=", s.untilUpper);
  if (s.since !== undefined) arm = arm.where("created_at", ">=", s.sinceLower).where("event_at", ">=", s.since);
  if (s.until !== undefined) arm = arm.where("event_at", "<=", s.until);
  return arm;
}

/**
 * A late arm: the late rows of one bucket, in createdAt order from its index (`base` carries
 * the cursor). The bucket's `is not null` is implied by its equality, but stated: it is the
 * index's condition word for word, which is how SQLite knows that a partial index holds every
 * row the query may want. An edge checks the event date too, on the index entry.
 */
export function lateArm<O>(base: TableQuery<O>, s: Slots, tile: { level: number; slot: Slots[string]; edge: boolean }): TableQuery<O> {
  const bucket = bucketOf(tile.level);
  let arm = base.where(bucket, "=", tile.slot).where(bucket, "is not", null);
  if (tile.edge && s.since !== undefined) arm = arm.where("late_event_at", ">=", s.since);
  if (tile.edge && s.until !== undefined) arm = arm.where("late_event_at", "<=", s.until);
  return arm;
}

/**
 * A window in name order that spans at most this many weeks of event dates is read by week
 * (weekValues): each week an arm of up to a page of the index of rows by event week and
 * name, merged, so a page reads about a page of entries plus a seek a week, however small a
 * share of the tenant's rows the window holds; only the weeks at its ends read entries outside
 * it, at most their own. A wider window, which a week's arm each would cost more seeks than the
 * name index costs entries, picks its plan on its first page (list.repository.ts).
 */
export const NAME_WEEK_ARMS = 8;
/** The weeks of that index, counted from 0001-01-01 (a Monday) as the late rows' buckets are: Monday to Sunday, UTC. */
export const NAME_WEEK_MS = 7 * 24 * 60 * 60 * 1000;

/** A row's event week, as the index (0015, 0016) writes it: the divisor is a literal, never a parameter. */
export const weekOf = sql<number>`cast((event_at + ${sql.lit(BUCKET_ORIGIN_MS)}) / ${sql.lit(NAME_WEEK_MS)} as integer)`;

const weekAt = (ms: number) => asInteger(Math.floor((ms + BUCKET_ORIGIN_MS) / NAME_WEEK_MS));

/**
 * A window's values for a page in name order read by week: its bounds and each week it spans,
 * `w0` to `w<n>` in order (the first checks `since`, the last `until`). A window open at its end
 * is read up to the week of a day from `now` (ASSUMED_AHEAD_MS), past which no row's event lies
 * but for a device's wrong clock: `pastWeek` is that week, and the page checks in its own
 * statement that the tenant has no row in a later week, and holds no row when it has
 * (verifiedTenant in list.repository.ts). Undefined for a window open at its start, or spanning
 * more than NAME_WEEK_ARMS weeks (up to that week, when open at its end), or starting after it.
 */
export function weekValues({ since, until }: Pick<ListQuery, "since" | "until">, now: number): Record<string, number> | undefined {
  if (since === undefined) return undefined;
  const [first, last] = [weekAt(since), weekAt(until ?? now + ASSUMED_AHEAD_MS)];
  if (last < first || last - first + 1 > NAME_WEEK_ARMS) return undefined;
  const values: Record<string, number> = until === undefined ? { since, pastWeek: last } : { since, until };
  for (let week = first; week <= last; week += 1) values[`w${week - first}`] = week;
  return values;
}

/** The weeks of a page read by week, from its values' names (weekValues): each one's slot, and whether it is the first or the last. */
export function weekTiles(s: Slots): { slot: Slots[string]; first: boolean; last: boolean }[] {
  const weeks = Object.keys(s).filter((name) => /^w\d+$/.test(name));
  return weeks.map((name, i) => ({ slot: s[name], first: i === 0, last: i === weeks.length - 1 }));
}

/**
 * The event dates a tenant's rows span, by whole weeks of the index of rows by event week
 * (low inclusive, high exclusive), as a process last found them (list.service.ts): a hint of
 * what share of the rows a wide window in name order holds, were they spread evenly.
 */
export interface EventSpan {
  low: number;
  high: number;
}

/** The span of the weeks from `low` to `high` (inclusive), as found by their numbers. */
export function spanOfWeeks(low: number, high: number): EventSpan {
  return { low: low * NAME_WEEK_MS - BUCKET_ORIGIN_MS, high: (high + 1) * NAME_WEEK_MS - BUCKET_ORIGIN_MS };
}

/**
 * A window in name order whose part of its tenant's span is at least 1 / NAME_FIRST_SHARE, were
 * the rows spread evenly, is a share so large that the name index likely serves it: its page
 * is read by the name index straight away, limited to none unless the name index's first
 * entries show it a share (choosingPage's probe), and read as choosingPage reads it when none.
 */
export const NAME_FIRST_SHARE = 4;

/** The part of `span` that the window covers, from 0 to 1. */
export function shareOfSpan({ since, until }: Pick<ListQuery, "since" | "until">, span: EventSpan): number {
  const low = Math.max(since ?? -Infinity, span.low);
  const high = Math.min(until === undefined ? Infinity : until + 1, span.high);
  return Math.max(0, high - low) / (span.high - span.low);
}
