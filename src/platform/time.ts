/**
 * Times in and out. cribline stores every time as integer milliseconds since the epoch
 * (both engines, so cursors carry the stored value exactly) and returns them as RFC 3339
 * UTC with millisecond precision.
 */

// RFC 3339 date-time: `T`, hours 00-23, seconds required, optional fraction (of any length:
// digits past the nanosecond are dropped), Z or ±hh:mm.
const RFC3339 = /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):([0-5]\d):([0-5]\d)(?:\.(\d+))?(?:(Z)|([+-])([01]\d|2[0-3]):([0-5]\d))$/;

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
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Strict RFC 3339 parse with a calendar check; undefined for anything else. */
export function parseRfc3339(text: string): ParsedTime | undefined {
  const m = RFC3339.exec(text);
  if (m === null) return undefined;
  const [, y, mo, d, h, mi, s, frac = "", z, sign, oh, om] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return undefined;
  const millis = Number(frac.slice(0, 3).padEnd(3, "0"));
  // Date.UTC maps years 0-99 to 1900-1999, so set the year separately (2000 is a leap year,
  // and the day was checked against the real year above).
  const local = new Date(Date.UTC(2000, month - 1, day, Number(h), Number(mi), Number(s), millis));
  local.setUTCFullYear(year);
  const offsetMinutes = z === "Z" ? 0 : (sign === "-" ? -1 : 1) * (Number(oh) * 60 + Number(om));
  const ms = local.getTime() - offsetMinutes * 60_000;
  if (ms < MIN_MS || ms > MAX_MS) return undefined;
  return { ms, subMillisecond: Number(frac.slice(3, 9).padEnd(6, "0")) };
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
