/**
 * Times in and out. cribline stores every time as integer milliseconds since the epoch
 * (both engines, so cursors carry the stored value exactly) and returns them as RFC 3339
 * UTC with millisecond precision.
 */

export interface ParsedTime {
  /** Milliseconds since the epoch, the fraction below a millisecond dropped. */
  ms: number;
  /** The fraction below the millisecond, in nanoseconds (0 to 999,999). */
  subMillisecond: number;
}

/** 0001-01-01T00:00:00.000Z to 9999-12-31T23:59:59.999Z: what four-digit years can return. */
const MIN_MS = -62135596800000;
const MAX_MS = 253402300799999;

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Days from 1970-01-01 to a date of the proleptic Gregorian calendar (H. Hinnant's days_from_civil). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146097 + dayOfEra - 719468;
}

const ZERO = 48;
const NINE = 57;

/** The value of the `length` decimal digits at `at`, or -1 when one of them is not a digit. */
function digits(text: string, at: number, length: number): number {
  let value = 0;
  for (let i = at; i < at + length; i += 1) {
    const c = text.charCodeAt(i);
    if (c < ZERO || c > NINE) return -1;
    value = value * 10 + (c - ZERO);
  }
  return value;
}

/**
 * Strict RFC 3339 date-time with a calendar check; undefined for anything else: `T` and `Z` in
 * upper case, hours 00-23, seconds required (no leap second), an optional fraction of any length
 * (digits past the nanosecond are dropped), then `Z` or ±hh:mm. Read character by character: a
 * sync batch parses every record's times, and a regular expression and a Date took a microsecond
 * each (docs/measurements.md).
 */
export function parseRfc3339(text: string): ParsedTime | undefined {
  const n = text.length;
  if (n < 20) return undefined;
  const year = digits(text, 0, 4);
  const month = digits(text, 5, 2);
  const day = digits(text, 8, 2);
  const hour = digits(text, 11, 2);
  const minute = digits(text, 14, 2);
  const second = digits(text, 17, 2);
  if (
    text.charCodeAt(4) !== 45 || // -
    text.charCodeAt(7) !== 45 ||
    text.charCodeAt(10) !== 84 || // T
    text.charCodeAt(13) !== 58 || // :
    text.charCodeAt(16) !== 58 ||
    year < 1 ||
    month < 1 ||
    month > 12 ||
    day < 1 ||
    day > daysInMonth(year, month) ||
    hour < 0 ||
    hour > 23 ||
    minute < 0 ||
    minute > 59 ||
    second < 0 ||
    second > 59
  ) {
    return undefined;
  }
  let at = 19;
  let millis = 0;
  let subMillisecond = 0;
  if (text.charCodeAt(at) === 46) {
    // .
    at += 1;
    const from = at;
    while (at < n) {
      const c = text.charCodeAt(at);
      if (c < ZERO || c > NINE) break;
      const place = at - from;
      if (place < 3) millis = millis * 10 + (c - ZERO);
      else if (place < 9) subMillisecond = subMillisecond * 10 + (c - ZERO);
      at += 1;
    }
    const count = at - from;
    if (count === 0) return undefined;
    for (let place = count; place < 3; place += 1) millis *= 10;
    for (let place = Math.max(count, 3); place < 9; place += 1) subMillisecond *= 10;
  }
  let offsetMinutes: number;
  const zone = text.charCodeAt(at);
  if (zone === 90 && at + 1 === n) {
    // Z
    offsetMinutes = 0;
  } else if ((zone === 43 || zone === 45) && at + 6 === n && text.charCodeAt(at + 3) === 58) {
    // + or -, then hh:mm
    const oh = digits(text, at + 1, 2);
    const om = digits(text, at + 4, 2);
    if (oh < 0 || oh > 23 || om < 0 || om > 59) return undefined;
    offsetMinutes = (zone === 45 ? -1 : 1) * (oh * 60 + om);
  } else {
    return undefined;
  }
  const ms = (((daysFromCivil(year, month, day) * 24 + hour) * 60 + minute - offsetMinutes) * 60 + second) * 1000 + millis;
  if (ms < MIN_MS || ms > MAX_MS) return undefined;
  return { ms, subMillisecond };
}

/** Compares two parsed times at full precision. */
export function compareTimes(a: ParsedTime, b: ParsedTime): number {
  return a.ms - b.ms || a.subMillisecond - b.subMillisecond;
}

const DAY_MS = 86_400_000;
/** "YYYY-MM-DDT" by day since the epoch: a page's times fall on a few days. */
const dayPrefixes = new Map<number, string>();

const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);

/**
 * `new Date(ms).toISOString()`, which a page calls three times a record and which showed in
 * its profile (docs/measurements.md): the date part is made once per day and kept, the rest
 * is arithmetic. Outside years 1 to 9999 (which cribline does not store) it is toISOString.
 */
export function formatTime(ms: number): string {
  if (!(ms >= MIN_MS && ms <= MAX_MS) || !Number.isInteger(ms)) return new Date(ms).toISOString();
  const day = Math.floor(ms / DAY_MS);
  let prefix = dayPrefixes.get(day);
  if (prefix === undefined) {
    prefix = new Date(day * DAY_MS).toISOString().slice(0, 11);
    if (dayPrefixes.size >= 4096) dayPrefixes.clear();
    dayPrefixes.set(day, prefix);
  }
  let rest = ms - day * DAY_MS;
  const millis = rest % 1000;
  rest = (rest - millis) / 1000;
  const seconds = rest % 60;
  rest = (rest - seconds) / 60;
  const minutes = rest % 60;
  const hours = (rest - minutes) / 60;
  const fraction = millis < 10 ? `00${millis}` : millis < 100 ? `0${millis}` : `${millis}`;
  return `${prefix}${pad2(hours)}:${pad2(minutes)}:${pad2(seconds)}.${fraction}Z`;
}
