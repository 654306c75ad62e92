/**
 * The event-date axis cut into buckets, as the indexes of the time window cut it (their
 * migrations write the same numbers as literals): the late rows' by 8 hours, 64 hours and 512
 * hours (levels 1 to 3, each eight of the level below), and every row's by ISO week. Dates count from
 * year 1, so that bucket numbers are never negative and integer division floors them on both
 * engines, and every bucket of a date from year 1 to 9999 fits a 4-byte integer.
 */
import { sql, type RawBuilder } from "kysely";

export type Level = 1 | 2 | 3;
export const LEVELS: readonly Level[] = [1, 2, 3];
/** The smallest level indexed: the buckets at a window's two ends, which check the event date. */
export const EDGE_LEVEL: Level = 1;

export const BUCKET_ORIGIN_MS = 62_135_596_800_000;
const LEVEL_MS: Readonly<Record<Level, number>> = { 1: 28_800_000, 2: 230_400_000, 3: 1_843_200_000 };
/** Weeks counted from 0001-01-01, a Monday: Monday to Sunday, UTC. */
export const WEEK_MS = 604_800_000;

/** A bound that lies beyond any event date (an open end) kept within a 4-byte integer, as PostgreSQL takes it. */
const asInteger = (n: number) => Math.min(2 ** 31 - 1, Math.max(-(2 ** 31), n));

export const bucketAt = (level: Level, ms: number) => asInteger(Math.floor((ms + BUCKET_ORIGIN_MS) / LEVEL_MS[level]));
export const bucketStart = (level: Level, bucket: number) => bucket * LEVEL_MS[level] - BUCKET_ORIGIN_MS;
export const weekAt = (ms: number) => asInteger(Math.floor((ms + BUCKET_ORIGIN_MS) / WEEK_MS));

/** How many buckets of the level below one bucket of `level` spans. */
export const FANOUT = 8;

/**
 * A late row's bucket, written word for word as its index writes it: a planner matches an
 * expression index by its text, and the divisor is a literal so that the text never changes.
 */
export const bucketOf = (level: Level): RawBuilder<number> =>
  sql<number>`cast((late_event_at + ${sql.lit(BUCKET_ORIGIN_MS)}) / ${sql.lit(LEVEL_MS[level])} as integer)`;

/** A row's event week, as the index of rows by event week and name writes it. */
export const weekOf: RawBuilder<number> = sql<number>`cast((event_at + ${sql.lit(BUCKET_ORIGIN_MS)}) / ${sql.lit(WEEK_MS)} as integer)`;
