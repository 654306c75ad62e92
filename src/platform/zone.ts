/**
 * IANA time zones and their calendars: which instant a zone's day, ISO week or month starts
 * at, daylight-saving changes and offsets of :30 and :45 included. Everything is computed from
 * the zone's offset at an instant, as the runtime's time zone data gives it (`Intl`).
 */

const HOUR = 3_600_000;
const DAY = 24 * HOUR;

export type Interval = "day" | "week" | "month" | "total";

/** One formatter per zone: making one costs far more than using it. */
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterOf(zone: string): Intl.DateTimeFormat {
  let formatter = formatters.get(zone);
  if (formatter === undefined) {
    formatter = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      era: "short",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
      second: "numeric",
    });
    formatters.set(zone, formatter);
  }
  return formatter;
}

/**
 * `name` when it is a time zone as IANA writes it, else undefined. An alias (`US/Eastern`,
 * `Asia/Kolkata`) is one; a name in another letter case (`europe/berlin`, `us/eastern`) is not.
 */
export function zoneNamed(name: string): string | undefined {
  if (!/^[A-Za-z][A-Za-z0-9_+\-/]*$/.test(name)) return undefined;
  let resolved;
  try {
    resolved = new Intl.DateTimeFormat("en-US", { timeZone: name }).resolvedOptions().timeZone;
  } catch {
    return undefined;
  }
  if (resolved === name) return name;
  if (resolved.toLowerCase() === name.toLowerCase()) return undefined;
  // An alias: each of its words begins as IANA writes it, with a capital or a digit.
  return name.split(/[/_]/).every((word) => /^[A-Z0-9]/.test(word)) ? name : undefined;
}

/** The zone's offset from UTC at instant `t`, in milliseconds (local time = t + offset). */
export function offsetAt(zone: string, t: number): number {
  const parts: Record<string, string> = {};
  for (const { type, value } of formatterOf(zone).formatToParts(t)) parts[type] = value;
  const year = parts.era === "BC" ? 1 - Number(parts.year) : Number(parts.year);
  const local = Date.UTC(year, Number(parts.month) - 1, Number(parts.day), Number(parts.hour), Number(parts.minute), Number(parts.second));
  // Date.UTC reads years 0 to 99 as 1900 to 1999.
  const shifted = year >= 0 && year < 100 ? new Date(local).setUTCFullYear(year) : local;
  return shifted - Math.floor(t / 1000) * 1000;
}

/**
 * The first instant whose local time in `zone` is `local` (a local date-time written as if it
 * were UTC) or later: the earlier of two when clocks went back, the moment clocks jumped when
 * that local time never happened.
 */
export function instantOfLocal(zone: string, local: number): number {
  const offsets = [...new Set([offsetAt(zone, local - DAY), offsetAt(zone, local), offsetAt(zone, local + DAY)])];
  const exact = offsets.map((o) => local - o).filter((t) => offsetAt(zone, t) === local - t);
  if (exact.length > 0) return Math.min(...exact);
  // A gap: the instant the clocks jumped lies between the candidates; find it to the second.
  let low = Math.min(...offsets.map((o) => local - o));
  let high = Math.max(...offsets.map((o) => local - o));
  while (high - low > 1000) {
    const mid = Math.floor((low + high) / 2000) * 1000;
    if (mid + offsetAt(zone, mid) >= local) high = mid;
    else low = mid;
  }
  return high;
}

/** A local date-time (as if UTC) moved to the start of its interval: its day, its week's Monday, its month. */
function startOfPeriod(local: number, interval: Exclude<Interval, "total">): number {
  const day = Math.floor(local / DAY) * DAY;
  if (interval === "day") return day;
  const date = new Date(day);
  // ISO weeks start on Monday (getUTCDay: 0 is Sunday).
  if (interval === "week") return day - ((date.getUTCDay() + 6) % 7) * DAY;
  date.setUTCDate(1);
  return date.getTime();
}

function nextLocal(local: number, interval: Exclude<Interval, "total">): number {
  if (interval !== "month") return local + (interval === "day" ? DAY : 7 * DAY);
  const date = new Date(local);
  date.setUTCMonth(date.getUTCMonth() + 1);
  return date.getTime();
}

/**
 * The starts of the periods that the inclusive window `from`..`to` touches, in order: the
 * first is the start of the period holding `from` (at or before it). `total` is one period,
 * which starts at `from`. At most `max` starts are made; undefined when more would be.
 */
export function periodStarts(zone: string, interval: Interval, from: number, to: number, max: number): number[] | undefined {
  if (interval === "total") return [from];
  const starts: number[] = [];
  let local = startOfPeriod(from + offsetAt(zone, from), interval);
  for (let start = instantOfLocal(zone, local); start <= to; start = instantOfLocal(zone, local)) {
    // A local date that never was (a day a zone skipped) starts where the next one does.
    if (start !== starts[starts.length - 1]) starts.push(start);
    if (starts.length > max) return undefined;
    local = nextLocal(local, interval);
  }
  return starts;
}

/** The instant as a date-time in the zone, with its offset: `2026-03-29T00:00:00+01:00` (milliseconds when there are any). */
export function formatInZone(zone: string, t: number): string {
  const offset = offsetAt(zone, t);
  const local = new Date(t + offset).toISOString().slice(0, t % 1000 === 0 ? 19 : 23);
  const minutes = Math.round(Math.abs(offset) / 60_000);
  const hh = String(Math.floor(minutes / 60)).padStart(2, "0");
  const mm = String(minutes % 60).padStart(2, "0");
  return `${local}${offset < 0 ? "-" : "+"}${hh}:${mm}`;
}

/** The month number (year x 12 + month - 1) of a local date-time written as if UTC. */
export function monthNumber(local: number): number {
  const date = new Date(local);
  return date.getUTCFullYear() * 12 + date.getUTCMonth();
}

/** The first instant of month `month` (a month number) in the zone. */
export function monthStart(zone: string, month: number): number {
  const date = new Date(0);
  date.setUTCFullYear(Math.floor(month / 12), month % 12, 1);
  return instantOfLocal(zone, date.getTime());
}
