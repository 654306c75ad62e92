/**
 * Ids of the webhook tables' rows: a prefix, then the time the row was made, a counter and a
 * per-process tag, in base 36 with fixed widths, so that ids sort as text by the time they
 * were made. New rows go to the end of each index on their id instead of to random pages all
 * over it, a time range is a key range (replays, retention), and no id costs a call for
 * random bytes.
 */
import { randomBytes } from "node:crypto";

export const MESSAGE_ID_PREFIX = "msg_";
export const FANOUT_ID_PREFIX = "fan_";
export const DELIVERY_ID_PREFIX = "dlv_";
export const ATTEMPT_ID_PREFIX = "att_";

/** Random per process: ids made by two processes in the same millisecond still differ. */
const PROCESS_TAG = randomBytes(6).toString("base64url");
let counter = 0;

/** A unique id that sorts by the time it was made (`now`). */
export function newId(prefix: string, now: number): string {
  counter = (counter + 1) % 36 ** 6;
  return `${idTime(prefix, now)}${counter.toString(36).padStart(6, "0")}${PROCESS_TAG}`;
}

/** The start of every id made at `ms` (clamped to what nine base-36 digits hold): ids sort after it. */
export function idTime(prefix: string, ms: number): string {
  return `${prefix}${Math.min(Math.max(ms, 0), 36 ** 9 - 1)
    .toString(36)
    .padStart(9, "0")}`;
}

/** The time an id was made at: the nine base-36 digits after its prefix. */
export function timeOfId(id: string): number {
  const start = id.indexOf("_") + 1;
  return parseInt(id.slice(start, start + 9), 36);
}

/** Whether `text` is an id newId could have made with `prefix`. */
export function isIdOf(prefix: string, text: string): boolean {
  return new RegExp(`^${prefix}[0-9a-z]{15}[A-Za-z0-9_-]{8}$`).test(text);
}
