/**
 * The time window keeps the newest-first order (by createdAt) while it filters on the event
 * date, two different columns: a plain index range on one would need a sort on the other,
 * costing time in proportion to the window's size. Instead it uses how records arrive: most
 * are stored within SLACK of their event, so their createdAt lies within the window widened
 * by SLACK on each side, and an ordered range scan of the createdAt index finds them (arm A).
 * The few stored longer before or after their event carry `late_event_at`, in a partial
 * index by (UTC day of late_event_at, created_at, id); arm B takes those in the window that
 * arm A cannot see. A window of at most MAX_LATE_DAYS days reads them day by day, each day
 * in createdAt order, so every arm comes in page order and the database merges them and stops
 * when the page is full; a longer or open-ended window reads its late rows as one range and
 * sorts them. The arms are disjoint, and the page is the first `take` rows of their union in
 * createdAt order. Correctness never depends on SLACK, only speed does.
 */
import { sql } from "kysely";
import { SLACK_MS } from "../collections/late-event.js";
import type { CursorPosition } from "../platform/cursor.js";
import type { ListQuery } from "./list.query.js";
import type { FilteredQuery, PageQuery, Slots } from "./list.repository.js";

/**
 * The day a late row is indexed by: its event date in whole UTC days since the epoch, rounded
 * toward zero (integer division, the same on both engines). Migration 0007 writes this very
 * expression in the index, and a planner matches an expression index by its text: the
 * divisor is a literal, never a parameter.
 */
export const LATE_DAY_MS = 86_400_000;
const lateDay = sql<number>`late_event_at / ${sql.lit(LATE_DAY_MS)}`;
const dayOf = (ms: number) => Math.trunc(ms / LATE_DAY_MS);

/**
 * Up to this many days, a window reads its late rows day by day (one arm each, in page order,
 * read only as far as the page needs); beyond, or when open-ended, as one range that is
 * sorted. As a range, each page of the bench's one-day window read and sorted all 165 late
 * rows of that day, bodies and all; day by day it reads no more than the page takes. Each day
 * is one more index seek a page, and one more shape of query.
 */
export const MAX_LATE_DAYS = 7;

/**
 * The window's values: its bounds, arm A's createdAt range around them, and arm B's days: each
 * day (lateDay0, lateDay1, ...) of a short window, or the first and last day of any other.
 */
export function windowValues({ since, until }: ListQuery): Record<string, number> {
  const values: Record<string, number> = {};
  if (since !== undefined) Object.assign(values, { since, sinceLower: since - SLACK_MS });
  if (until !== undefined) Object.assign(values, { until, untilUpper: until + SLACK_MS });
  // A lower bound finer than a millisecond rounds up (list.query.ts), past an equal upper one:
  // such a window has no day and holds nothing, which the range finds out.
  const days = since === undefined || until === undefined ? Infinity : dayOf(until) - dayOf(since) + 1;
  if (days >= 1 && days <= MAX_LATE_DAYS) {
    for (let day = 0; day < days; day++) values[`lateDay${day}`] = dayOf(since!) + day;
  } else {
    if (since !== undefined) values.lateDayLow = dayOf(since);
    if (until !== undefined) values.lateDayHigh = dayOf(until);
  }
  return values;
}

/** The slots of a short window's days, in order; none for any other window. */
export function lateDays(s: Slots): Slots[string][] {
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
export function onTimeArm(base: PageQuery, s: Slots, upper: ArmAUpperBound): PageQuery {
  let arm = base;
  if (upper === "until") arm = arm.where("created_at", "<=", s.untilUpper);
  if (s.since !== undefined) arm = arm.where("created_at", ">=", s.sinceLower).where("event_at", ">=", s.since);
  if (s.until !== undefined) arm = arm.where("event_at", "<=", s.until);
  return arm;
}

/**
 * Arm B of a short window, one day of it: the late rows of that event day in the window whose
 * createdAt falls outside arm A's range, in page order from the late index (`base` carries
 * the cursor). It selects and orders by `created_at` itself, so a planner could pick a
 * createdAt index for it; the equality on the day makes the late index the far narrower
 * range, which the plans test checks on both engines.
 */
export function lateDayArm(base: PageQuery, s: Slots, day: Slots[string]): PageQuery {
  return base
    .where(lateDay, "=", day)
    .where("late_event_at", ">=", s.since)
    .where("late_event_at", "<=", s.until)
    .where((eb) => eb.or([eb("created_at", "<", s.sinceLower), eb("created_at", ">", s.untilUpper)]));
}

/**
 * Arm B of a long or open-ended window: late rows in the window whose createdAt falls outside
 * arm A's range, from the partial late index over the window's days, then sorted. It selects
 * and compares `created_at + 0` so that no createdAt index can serve it, neither as a range
 * nor for its order: a planner would otherwise walk the tenant's whole createdAt index hoping
 * to fill the page early (measured at 0.1 to 5 seconds against 0.1 ms on the bench's
 * 1,000,000 rows).
 */
export function lateRangeArm(base: FilteredQuery, s: Slots): PageQuery {
  const createdAt = sql<number>`created_at + 0`;
  let arm = base.select(["tenant_id", "id", createdAt.as("created_at"), "updated_at", "name_key", "code_key", "body"]);
  if (s.since !== undefined) arm = arm.where(lateDay, ">=", s.lateDayLow).where("late_event_at", ">=", s.since);
  if (s.until !== undefined) arm = arm.where(lateDay, "<=", s.lateDayHigh).where("late_event_at", "<=", s.until);
  arm = arm.where((eb) => {
    const outside = [];
    if (s.since !== undefined) outside.push(eb(createdAt, "<", s.sinceLower));
    if (s.until !== undefined) outside.push(eb(createdAt, ">", s.untilUpper));
    return eb.or(outside);
  });
  if (s.afterKey !== undefined) arm = arm.where((eb) => eb(eb.tuple(createdAt, eb.ref("id")), "<", eb.tuple(s.afterKey, s.afterId)));
  return arm;
}
