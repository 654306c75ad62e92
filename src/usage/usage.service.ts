/**
 * A page of a usage report. The window's periods are found in the report's time zone; the page
 * reads them in slices, one statement each, the first slice one period wide and each next twice
 * as wide, until the page is full: a page of a wide report reads no further than it needs.
 * Whole months of the tenant's own zone are read from their totals, the rest from the records:
 * by month in that zone, or in total in any zone (the whole window is then one period, and
 * which months are whole inside it does not depend on the zone the period is written in).
 */
import type { Kysely } from "kysely";
import type { CursorCodec } from "../platform/cursor.js";
import { ApiError } from "../platform/errors.js";
import { checkCursorTenant, openCursor, pageJson, pageOf } from "../platform/pager.js";
import { formatInZone, monthNumber, offsetAt, periodStarts } from "../platform/zone.js";
import type { Schema } from "../storage/schema.js";
import { tenantZone } from "../tenants/tenant.repository.js";
import { groupNames } from "./usage.names.js";
import { nameFieldOf } from "./usage.repository.js";
import { parseUsageQuery, type UsageQuery } from "./usage.query.js";
import { sliceStatement, usageRowOf, type MonthsArm, type UsageRow } from "./usage.sql.js";

/** The most periods a window may hold (months, for `total`): a report is one answer, not a data dump. */
export const MAX_PERIODS = 1000;

function tooWide(query: UsageQuery): never {
  const unit = query.interval === "total" ? "month" : query.interval;
  throw new ApiError(
    "invalid_time_window",
    `the window from createdSince to createdUntil holds more than ${MAX_PERIODS} ${unit}s: ask for a shorter one or a longer interval`,
    { param: "createdUntil" },
  );
}

/** The months of `from`..`to` (an end exclusive) read from their totals, and the edges left to the records. */
function splitByMonths(zone: string, from: number, to: number): { months?: { first: number; last: number }; ranges: [number, number][] } {
  const starts = periodStarts(zone, "month", from, to, MAX_PERIODS + 2) ?? [];
  const full = starts.flatMap((start, i) => {
    const next = starts[i + 1];
    return start >= from && next !== undefined && next <= to ? [{ start, next }] : [];
  });
  const first = full[0];
  const last = full[full.length - 1];
  if (first === undefined || last === undefined) return { ranges: [[from, to]] };
  const number = (t: number) => monthNumber(t + offsetAt(zone, t));
  const ranges: [number, number][] = [
    [from, first.start],
    [last.next, to],
  ];
  return { months: { first: number(first.start), last: number(last.start) }, ranges: ranges.filter(([a, b]) => a < b) };
}

interface Plan {
  query: UsageQuery;
  tenantId: number;
  zone: string;
  periods: number[];
  /** The tenant's zone, whose whole months come from their totals; undefined: none do. */
  monthsZone: string | undefined;
}

async function readRows(db: Kysely<Schema>, plan: Plan, start: number, after: { period: number; groups: string[] } | undefined) {
  const { query, periods, monthsZone } = plan;
  const rows: UsageRow[] = [];
  const wanted = query.limit + 1;
  for (let a = start, width = 1; a < periods.length && rows.length < wanted; a += width, width *= 2) {
    const b = Math.min(periods.length, a + width);
    const from = Math.max(query.since, periods[a] ?? 0);
    const to = b < periods.length ? (periods[b] ?? 0) : query.until + 1;
    const slice = periods.slice(a, b);
    const split = monthsZone === undefined ? { ranges: [[from, to]] as [number, number][] } : splitByMonths(monthsZone, from, to);
    let months: MonthsArm | undefined;
    if (split.months !== undefined && monthsZone !== undefined) {
      const field = query.groupBy[0] ?? "costCenterId";
      const thresholds = slice.slice(1).map((p) => monthNumber(p + offsetAt(monthsZone, p)));
      months = { field, from: split.months.first, to: split.months.last + 1, thresholds, periods: slice };
    }
    const statement = sliceStatement({
      tenantId: plan.tenantId,
      groupBy: query.groupBy,
      filters: query.filters,
      periods: slice,
      ranges: split.ranges,
      ...(months === undefined ? {} : { months }),
      ...(after === undefined ? {} : { after }),
      limit: wanted - rows.length,
    });
    rows.push(...(await statement.execute(db)).rows.map((r) => usageRowOf(r, query.groupBy.length)));
  }
  return rows;
}

function rowJson(plan: Plan, names: Map<string, string | null>[], row: UsageRow): string {
  const [withdrawals, withdrawn, returns, returned, exchanges, exchanged] = row.counts;
  const groups = plan.query.groupBy.map((field, i) => {
    const id = row.groups[i] ?? "";
    const name = names[i]?.get(id) ?? null;
    return `${JSON.stringify(field)}:${JSON.stringify(id)},${JSON.stringify(nameFieldOf(field))}:${JSON.stringify(name)}`;
  });
  const kind = (count = 0, quantity = 0) => `{"count":${count},"quantity":${quantity}}`;
  return `{"period":"${formatInZone(plan.zone, row.period)}",${groups.join(",")},"withdrawals":${kind(withdrawals, withdrawn)},"returns":${kind(returns, returned)},"exchanges":${kind(exchanges, exchanged)},"netQuantity":${(withdrawn ?? 0) - (returned ?? 0)}}`;
}

/** The page of the tenant's usage report that the query string asks for, as JSON text. */
export async function usagePage(db: Kysely<Schema>, cursors: CursorCodec, tenantId: number, queryString: string): Promise<string> {
  const query = parseUsageQuery(queryString);
  const opened = query.cursor === undefined ? undefined : openCursor(cursors, query.cursor, "usage", query.filterKey);
  if (opened !== undefined) checkCursorTenant(opened, tenantId);
  const ownZone = await tenantZone(db, tenantId);
  const zone = query.timeZone ?? ownZone;
  const periods = periodStarts(zone, query.interval, query.since, query.until, MAX_PERIODS) ?? tooWide(query);
  if (query.interval === "total" && periodStarts(zone, "month", query.since, query.until, MAX_PERIODS) === undefined) tooWide(query);
  const byMonths =
    (query.interval === "total" || (query.interval === "month" && zone === ownZone)) &&
    query.groupBy.length === 1 &&
    query.filters.every(([field]) => field === query.groupBy[0]);
  const plan: Plan = { query, tenantId, zone, periods, monthsZone: byMonths ? ownZone : undefined };

  let start = 0;
  let after: { period: number; groups: string[] } | undefined;
  if (opened !== undefined) {
    after = { period: Number(opened.position.key), groups: opened.position.id.split(" ") };
    start = periods.indexOf(after.period);
    if (start < 0)
      throw new ApiError("invalid_cursor", "cursor does not belong to this report: send the cursor of a previous response unchanged", {
        param: "cursor",
      });
  }
  // One snapshot for every statement of the page and its names: a batch counts whole or not at all.
  return db
    .transaction()
    .setIsolationLevel("repeatable read")
    .execute(async (trx) => {
      const rows = await readRows(trx, plan, start, after);
      const page = pageOf(
        cursors,
        tenantId,
        { list: "usage", filterKey: query.filterKey, positionOf: (r: UsageRow) => ({ key: r.period, id: r.groups.join(" ") }) },
        rows,
        query.limit,
      );
      const names = await Promise.all(
        query.groupBy.map((field, i) => groupNames(trx, tenantId, field, [...new Set(page.rows.map((r) => r.groups[i] ?? ""))])),
      );
      return pageJson(page, (row) => rowJson(plan, names, row));
    });
}
