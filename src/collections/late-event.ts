/**
 * Most records are stored within SLACK_MS of their event date; the few that are not carry
 * that date again in `late_event_at`, so the time window can find them in a small index
 * (see lists/window.ts). SLACK_MS is baked into stored rows: changing it needs a migration
 * that recomputes `late_event_at`. Correctness never depends on it, only speed.
 */
export const SLACK_MS = 60 * 60 * 1000;

/** The value of `late_event_at` for a record with this event date stored at `createdAt`. */
export function lateEventAt(eventAt: number | null, createdAt: number): number | null {
  return eventAt !== null && Math.abs(createdAt - eventAt) > SLACK_MS ? eventAt : null;
}

/**
 * The buckets late rows are indexed by, to read a time window's late rows without sorting them:
 * at each level, one partial index of late rows by (bucket of the event date, createdAt, id),
 * the buckets of a level lasting `BUCKET_LEVELS_MS[level]` (an hour, then eight times the level
 * below, up to about 21 days). Event dates are counted from year 1 (`BUCKET_ORIGIN_MS` added),
 * so that bucket numbers are never negative and integer division floors them on both engines.
 * The numbers are baked into the indexes (migration 0008) as literals: changing them needs a
 * migration. The hour's level has no index since 0011 (the smallest indexed is eight hours),
 * the level of about 3.7 years none since 0012, and that of about 171 days none since 0018.
 */
export const BUCKET_ORIGIN_MS = 62_135_596_800_000;
const HOUR_MS = 60 * 60 * 1000;
export const BUCKET_LEVELS_MS: readonly number[] = [0, 1, 2, 3].map((level) => HOUR_MS * 8 ** level);
