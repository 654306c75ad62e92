/**
 * How a page reads its time window: a typed plan, a function of the query and of what its walk
 * learned on its first page (its Span, which the walk's cursors carry). No plan depends on what
 * a process has seen before.
 */
import type { ListQuery } from "../list.query.js";
import type { ListOrder } from "../list.shape.js";
import { weekAt } from "./buckets.js";
import { tiles, type Tile } from "./tiling.js";

/** An inclusive range of milliseconds (event dates) or of week numbers. */
export type Range = readonly [low: number, high: number];

/**
 * Where a tenant's rows lie on the event-date axis, found by one statement of index probes
 * (window/statement.ts, spanQuery) on a walk's first page when its plan needs it: the event
 * dates of its late rows and the event weeks of all its rows (null: none).
 */
export interface Span {
  late: Range | null;
  weeks: Range | null;
  /**
   * Where a wide window's late rows lie among those of other dates, found on the walk's second
   * page (null: not found, its tilings of the other dates too wide).
   */
  bracket?: Bracket | null;
}

/**
 * Where in createdAt order a walk's late rows lie among late rows of other dates (each null
 * when there is none): `above`, the newest createdAt below the walk's cursor of a late row dated
 * before the window, and `below`, the oldest of one dated after it. Every late row stored
 * between them is dated in the window, so a page there reads its late rows as one arm by
 * createdAt, which passes no other row, down to `above`.
 */
export interface Bracket {
  above: number | null;
  below: number | null;
}

export type WindowPlan =
  /** In createdAt order: the on-time arm, and an arm per bucket of the late rows' tiling. */
  | { kind: "tiles"; tiles: Tile[] }
  /**
   * In createdAt order: the late rows as one arm by createdAt, each row checked, above `above`
   * (null: all): a page within its walk's bracket, or a window whose tiling takes over MAX_LATE_ARMS.
   */
  | { kind: "late-by-created"; above: number | null }
  /** In name order, for a window of at most NAME_WEEK_ARMS weeks: an arm per event week, in name order. */
  | { kind: "weeks"; first: number; last: number }
  /** In name order, for a wider window: the name index, the event date checked on each entry. */
  | { kind: "name-index" };

/**
 * The most arms a page merges for its late rows, so that a statement stays small to plan and
 * within SQLite's limit of terms in a compound statement. Late rows whose dates span more (a
 * device clock reset decades back) are read as one arm by createdAt instead.
 */
export const MAX_LATE_ARMS = 48;
/**
 * A bounded window whose own tiling takes at most this many arms is read without its span: the
 * probe's round trip would cost more than the arms it saves. A walk whose tiling takes more finds
 * its bracket on its second page, and reads by it where it can.
 */
const MANY_ARMS = 8;
/** The most weeks a window in name order is read by, each an arm; a wider one is read by the name index. */
export const NAME_WEEK_ARMS = 8;

/**
 * A page's plan when it needs no span, or undefined when it needs its tenant's span: an
 * open-ended window's every page, and a later page of one whose own tiling in createdAt order
 * takes more than MANY_ARMS arms. Its first page reads its own tiling, in one statement rather
 * than two, unless that takes more than MAX_LATE_ARMS, which its tenant's late rows may narrow.
 */
export function ownPlan(query: Pick<ListQuery, "since" | "until">, order: ListOrder, firstPage: boolean): WindowPlan | undefined {
  const { since, until } = query;
  if (since === undefined || until === undefined) return undefined;
  if (order !== "created") return planOf(query, order, undefined);
  const most = firstPage ? MAX_LATE_ARMS : MANY_ARMS;
  const tiled = tiles(since, until, [since, until], most);
  return tiled.length > most ? undefined : { kind: "tiles", tiles: tiled };
}

/** Whether a page's plan needs its tenant's span (see ownPlan). */
export function needsSpan(query: Pick<ListQuery, "since" | "until">, order: ListOrder, firstPage: boolean): boolean {
  return ownPlan(query, order, firstPage) === undefined;
}

/** The plan of a page of a window, by its walk's span where needsSpan says it needs one (a bounded window's own tiling without). */
export function planOf(query: Pick<ListQuery, "since" | "until">, order: ListOrder, span: Span | undefined): WindowPlan {
  if (order === "created") return byCreatedAt(query, span);
  const { since, until } = query;
  const first = Math.max(since === undefined ? -Infinity : weekAt(since), span?.weeks?.[0] ?? -Infinity);
  const last = Math.min(until === undefined ? Infinity : weekAt(until), span?.weeks?.[1] ?? Infinity);
  // Calendar weeks, Monday to Sunday: an open end with no week of the tenant's to close it is no window of weeks.
  if (!Number.isFinite(first) || !Number.isFinite(last) || last - first + 1 > NAME_WEEK_ARMS) return { kind: "name-index" };
  // A window beyond the tenant's weeks holds nothing: one week's arm finds that at once.
  return { kind: "weeks", first, last: Math.max(first, last) };
}

function byCreatedAt({ since, until }: Pick<ListQuery, "since" | "until">, span: Span | undefined): WindowPlan {
  if (span === undefined) {
    if (since === undefined || until === undefined) throw new Error("an open-ended window needs its span");
    return tiledOrByCreated(tiles(since, until, [since, until], MAX_LATE_ARMS));
  }
  if (span.late === null) return { kind: "tiles", tiles: [] };
  const [lateLow, lateHigh] = span.late;
  const low = Math.max(since ?? -Infinity, lateLow);
  const high = Math.min(until ?? Infinity, lateHigh);
  // Past the tenant's late rows no late row lies, so a bucket may reach there unchecked.
  const outer: Range = [(since ?? -Infinity) <= lateLow ? -Infinity : low, (until ?? Infinity) >= lateHigh ? Infinity : high];
  return tiledOrByCreated(tiles(low, high, outer, MAX_LATE_ARMS));
}

const tiledOrByCreated = (tiled: Tile[]): WindowPlan =>
  tiled.length > MAX_LATE_ARMS ? { kind: "late-by-created", above: null } : { kind: "tiles", tiles: tiled };

/** Whether a walk's later pages read by its bracket where they can: a tiling (narrowed by the span) of more than MANY_ARMS arms. */
export function wantsBracket(plan: WindowPlan): boolean {
  return plan.kind === "tiles" && plan.tiles.length > MANY_ARMS;
}

/**
 * A tiled page's plan by its walk's bracket: its late rows by createdAt above the bracket's
 * `above`, for a page whose cursor lies between `above` and `below`; the tiling for any other.
 * A cursor at `below` may have rows of that createdAt with smaller ids below it, dated after the
 * window; one at `above` has none above `above`: both are the tiling's.
 */
export function withinBracket(plan: WindowPlan, bracket: Bracket | null | undefined, afterKey: number): WindowPlan {
  if (plan.kind !== "tiles" || bracket === undefined || bracket === null) return plan;
  const { above, below } = bracket;
  if ((below !== null && afterKey >= below) || (above !== null && afterKey <= above)) return plan;
  return { kind: "late-by-created", above };
}

/** A span as a cursor carries it. */
export function spanToCursor(span: Span): string {
  return JSON.stringify(span);
}

/** The span a cursor carries; undefined for a cursor that carries none, or another build's plan, whose page finds it again. */
export function spanOfCursor(carried: string | undefined): Span | undefined {
  if (carried === undefined || !carried.startsWith("{")) return undefined;
  try {
    const { late, weeks, bracket } = JSON.parse(carried) as { late?: unknown; weeks?: unknown; bracket?: unknown };
    if (!isRange(late) || !isRange(weeks)) return undefined;
    if (bracket === undefined || bracket === null) return { late, weeks, ...(bracket === null && { bracket }) };
    const { above, below } = bracket as { above?: unknown; below?: unknown };
    if (isInstant(above) && isInstant(below)) return { late, weeks, bracket: { above, below } };
  } catch {
    // A cursor's MAC has been checked: this is a cursor of another build, which the page reads anew.
  }
  return undefined;
}

const isInstant = (value: unknown): value is number | null => value === null || Number.isSafeInteger(value);

const isRange = (value: unknown): value is Range | null =>
  value === null ||
  (Array.isArray(value) &&
    value.length === 2 &&
    value.every((n) => Number.isSafeInteger(n)) &&
    (value[0] as number) <= (value[1] as number));
