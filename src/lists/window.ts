/**
 * The time window keeps the newest-first order (by createdAt) while it filters on the event
 * date, two different columns: a plain index range on one would need a sort on the other,
 * costing time in proportion to the window's size. Instead it uses how records arrive: most
 * are stored within SLACK of their event, so their createdAt lies within the window widened
 * by SLACK on each side, and an ordered range scan of the createdAt index finds them (arm A).
 * The few stored longer before or after their event carry `late_event_at`, in two partial
 * indexes, by (late_event_at, created_at, id) and by (UTC day of late_event_at, created_at,
 * id); arm B takes those in the window that arm A cannot see. A window of 12 hours to 7 days
 * (DAY_BY_DAY) reads them day by day from the second, each day in createdAt order, so every
 * arm comes in page order and the database merges them and stops when the page is full; any
 * other window (shorter, longer, open-ended) reads its late rows as one range of the first
 * and sorts them. The arms are disjoint, and the page is the first `take` rows of their union
 * in createdAt order. Correctness never depends on SLACK, only speed does.
 */
import { sql } from "kysely";
import { SLACK_MS } from "../collections/late-event.js";
import type { CursorPosition } from "../platform/cursor.js";
import type { ListQuery } from "./list.query.js";
import type { Slots, SlotValue } from "../storage/query-template.js";
import type { FilteredQuery, RowsQuery } from "./list.shape.js";

/**
 * The day a late row is indexed by: its event date in whole UTC days since the epoch, rounded
 * toward zero (integer division, the same on both engines). Migration 0007 writes this very
 * expression in the index, and a planner matches an expression index by its text: the
 * divisor is a literal, never a parameter.
 */
export const LATE_DAY_MS = 86_400_000;
const lateDay = sql<number>`late_event_at / ${sql.lit(LATE_DAY_MS)}`;
const dayOf = (ms: number) => Math.trunc(ms / LATE_DAY_MS);

/** Columns as expressions that no index serves, for filters that must not tempt a planner. */
const unindexed = { createdAt: sql<number>`created_at + 0`, eventAt: sql<number>`late_event_at + 0` };

/**
 * Which windows read their late rows day by day: those with both bounds, from 12 hours to 7
 * days long (touching up to 8 UTC days), one arm per day touched. A day's arm reads its day's
 * late rows in page order and skips those outside the window, so it stops early when the
 * window covers much of its days, and would skip most of them in a window of minutes.
 * Shorter windows, longer ones (an arm per day) and open-ended ones read their late rows as
 * one range and sort them (docs/measurements.md has the figures behind both bounds).
 */
export const DAY_BY_DAY = { shortestMs: 12 * 60 * 60 * 1000, longestMs: 7 * LATE_DAY_MS };

/**
 * The window's values: its bounds, arm A's createdAt range around them, and, for a window read
 * day by day, each of its days (lateDay0, lateDay1, ...).
 */
export function windowValues({ since, until }: ListQuery): Record<string, number> {
  const values: Record<string, number> = {};
  if (since !== undefined) Object.assign(values, { since, sinceLower: since - SLACK_MS });
  if (until !== undefined) Object.assign(values, { until, untilUpper: until + SLACK_MS });
  if (since !== undefined && until !== undefined && until - since >= DAY_BY_DAY.shortestMs && until - since <= DAY_BY_DAY.longestMs) {
    const first = dayOf(since);
    for (let day = first; day <= dayOf(until); day++) values[`lateDay${day - first}`] = day;
  }
  return values;
}

/** The slots of the days of a window read day by day, in order; none for any other window. */
export function lateDays(s: Slots): SlotValue[] {
  return Object.keys(s)
    .filter((name) => /^lateDay\d+$/.test(name))
    .map((name) => s[name]);
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
export function onTimeArm(base: RowsQuery, s: Slots, upper: ArmAUpperBound): RowsQuery {
  let arm = base;
  if (upper === "until") arm = arm.where("created_at", "<=", s.untilUpper);
  if (s.since !== undefined) arm = arm.where("created_at", ">=", s.sinceLower).where("event_at", ">=", s.since);
  if (s.until !== undefined) arm = arm.where("event_at", "<=", s.until);
  return arm;
}

/**
 * Arm B of a window read day by day, one day of it: the late rows of that event day in the
 * window whose createdAt falls outside arm A's range, in page order from the index by day
 * (`base` carries the cursor). Its filters on the event date and on createdAt compare
 * `late_event_at + 0` and `created_at + 0`, so that they offer a planner no other index range
 * (PostgreSQL would take the createdAt bounds as two bitmap scans of the index by day, and
 * SQLite the event date as a range of the index by event date, both then sorting the day's
 * late rows). It selects and orders by `created_at` itself: the equality on the day makes the
 * index by day the far narrower range than any createdAt index, which the plans test checks
 * on both engines, and on SQLite without statistics too.
 */
export function lateDayArm(base: RowsQuery, s: Slots, day: SlotValue): RowsQuery {
  const { createdAt, eventAt } = unindexed;
  return (
    base
      .where(lateDay, "=", day)
      // Implied by the equality, but stated: it is the index's condition word for word, which
      // is how SQLite knows that a partial index holds every row the query may want.
      .where(lateDay, "is not", null)
      .where(eventAt, ">=", s.since)
      .where(eventAt, "<=", s.until)
      .where((eb) => eb.or([eb(createdAt, "<", s.sinceLower), eb(createdAt, ">", s.untilUpper)]))
  );
}

/**
 * Arm B of any other window: late rows in the window whose createdAt falls outside arm A's
 * range, from the index by event date, then sorted. It selects and compares `created_at + 0`
 * so that no createdAt index can serve it, neither as a range nor for its order: a planner
 * would otherwise walk the tenant's whole createdAt index hoping to fill the page early, which
 * on a large tenant costs seconds a page (docs/measurements.md).
 */
export function lateRangeArm(base: FilteredQuery, s: Slots): RowsQuery {
  const { createdAt } = unindexed;
  let arm = base.select(["tenant_id", "id", createdAt.as("created_at"), "updated_at", "name_key", "code_key", "body"]);
  if (s.since !== undefined) arm = arm.where("late_event_at", ">=", s.since);
  if (s.until !== undefined) arm = arm.where("late_event_at", "<=", s.until);
  arm = arm.where((eb) => {
    const outside = [];
    if (s.since !== undefined) outside.push(eb(createdAt, "<", s.sinceLower));
    if (s.until !== undefined) outside.push(eb(createdAt, ">", s.untilUpper));
    return eb.or(outside);
  });
  if (s.afterKey !== undefined) arm = arm.where((eb) => eb(eb.tuple(createdAt, eb.ref("id")), "<", eb.tuple(s.afterKey, s.afterId)));
  return arm;
}
