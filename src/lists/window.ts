/**
 * The time window keeps the newest-first order (by createdAt) while it filters on the event
 * date, two different columns: a plain index range on one would need a sort on the other,
 * costing time in proportion to the window's size. Instead it uses how records arrive: most
 * are stored within SLACK of their event, so their createdAt lies within the window widened
 * by SLACK on each side, and an ordered range scan of the createdAt index finds them (arm A).
 * The few stored longer before or after their event carry `late_event_at`, indexed by
 * (late_event_at, created_at, id); arm B takes those in the window that arm A cannot see.
 * The two arms are disjoint; each yields at most one page in order, and the page is the first
 * `take` rows of their union. Correctness never depends on SLACK, only speed does.
 */
import { sql, type SelectQueryBuilder } from "kysely";
import type { CursorPosition } from "../platform/cursor.js";
import type { Schema } from "../storage/schema.js";

export const SLACK_MS = 60 * 60 * 1000;

/** The value of `late_event_at` for a record with this event date stored at `createdAt`. */
export function lateEventAt(eventAt: number | null, createdAt: number): number | null {
  return eventAt !== null && Math.abs(createdAt - eventAt) > SLACK_MS ? eventAt : null;
}

export interface Window {
  since: number | undefined;
  until: number | undefined;
}

// All record tables share one shape; see list.repository.ts.
type Query<O> = SelectQueryBuilder<Schema, "withdrawals", O>;

/**
 * Arm A: rows stored within SLACK of their event, by a createdAt range around the window.
 * Its upper end is one bound, the tighter of the cursor and `until + SLACK` (the other is
 * then implied), so the range scan starts where the page does, however deep.
 */
export function onTimeArm<O>(
  base: (after: CursorPosition | undefined) => Query<O>,
  { since, until }: Window,
  after: CursorPosition | undefined,
): Query<O> {
  const upper = until === undefined ? undefined : until + SLACK_MS;
  const cursorIsTighter = after !== undefined && (upper === undefined || (after.key as number) <= upper);
  let arm = base(cursorIsTighter ? after : undefined);
  if (upper !== undefined && !cursorIsTighter) arm = arm.where("created_at", "<=", upper);
  if (since !== undefined) arm = arm.where("created_at", ">=", since - SLACK_MS).where("event_at", ">=", since);
  if (until !== undefined) arm = arm.where("event_at", "<=", until);
  return arm;
}

/**
 * Arm B: late rows in the window whose createdAt falls outside arm A's range, from the
 * partial late index, then sorted (they are few). Its conditions and order use
 * `created_at + 0` so that no createdAt index can serve them: a planner with rough
 * statistics would otherwise walk the createdAt index hoping to fill the page early,
 * measured at 29 ms against 0.1 ms.
 */
export function lateArm<O>(base: Query<O>, { since, until }: Window, after: CursorPosition | undefined, take: number): Query<O> {
  const createdAt = sql<number>`created_at + 0`;
  let arm = base;
  if (since !== undefined) arm = arm.where("late_event_at", ">=", since);
  if (until !== undefined) arm = arm.where("late_event_at", "<=", until);
  arm = arm.where((eb) => {
    const outside = [];
    if (since !== undefined) outside.push(eb(createdAt, "<", since - SLACK_MS));
    if (until !== undefined) outside.push(eb(createdAt, ">", until + SLACK_MS));
    return eb.or(outside);
  });
  if (after !== undefined) arm = arm.where((eb) => eb(eb.tuple(createdAt, eb.ref("id")), "<", eb.tuple(after.key as number, after.id)));
  return arm.orderBy(createdAt, "desc").orderBy("id", "desc").limit(sql.lit(take));
}
