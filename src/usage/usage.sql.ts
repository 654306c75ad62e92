/**
 * The statement of a usage report's slice of periods: each record (or month's totals) is put in
 * its period by comparing its time with the periods' starts, written into the SQL as a
 * balanced CASE, then summed per period and group, after the cursor's row, in order.
 */
import { sql, type RawBuilder } from "kysely";
import { COUNTERS, USAGE_FIELDS, USAGE_KINDS, type UsageField } from "./usage.repository.js";

/** A report's row as read: its period's start (an instant), its group ids, and the counters. */
export interface UsageRow {
  period: number;
  groups: string[];
  counts: number[];
}

/** Months read from `usage_months`: their numbers, and the start of the period each belongs to. */
export interface MonthsArm {
  field: UsageField;
  /** First month and the month after the last, by number. */
  from: number;
  to: number;
  /** The month numbers where a period starts, and those periods' starts. */
  thresholds: number[];
  periods: number[];
}

export interface SliceStatement {
  tenantId: number;
  groupBy: UsageField[];
  filters: [UsageField, string][];
  /** The period starts of the slice, in order, and the event-time ranges read from `usage_records`. */
  periods: number[];
  ranges: [number, number][];
  months?: MonthsArm;
  after?: { period: number; groups: string[] };
  limit: number;
}

/** `value` put in its bucket: the bucket whose threshold is the last one at or below it (values[i] for thresholds[i - 1]). */
function bucketOf(value: RawBuilder<unknown>, thresholds: number[], values: number[], low = 0, high = values.length): RawBuilder<unknown> {
  if (high - low <= 1) return sql.lit(values[low] ?? 0);
  const mid = (low + high) >> 1;
  return sql`case when ${value} < ${sql.lit(thresholds[mid - 1] ?? 0)} then ${bucketOf(value, thresholds, values, low, mid)} else ${bucketOf(value, thresholds, values, mid, high)} end`;
}

const counted = (kind: number) => [
  sql`case when kind = ${sql.lit(kind)} then 1 else 0 end`,
  sql`case when kind = ${sql.lit(kind)} then quantity else 0 end`,
];

const ALIASES = COUNTERS.map((c) => sql.id(c));

function recordsArm(s: SliceStatement, [from, to]: [number, number]): RawBuilder<unknown> {
  const period = bucketOf(sql.ref("event_at"), s.periods.slice(1), s.periods);
  const groups = s.groupBy.map((field, i) => sql`${sql.ref(USAGE_FIELDS[field])} as ${sql.id(`g${i}`)}`);
  const counts = Object.values(USAGE_KINDS)
    .flatMap(counted)
    .map((expression, i) => sql`${expression} as ${ALIASES[i]}`);
  const filters = s.filters.map(([field, id]) => sql` and ${sql.ref(USAGE_FIELDS[field])} = ${id}`);
  return sql`select ${period} as period, ${sql.join([...groups, ...counts])} from usage_records
    where tenant_id = ${s.tenantId} and event_at >= ${from} and event_at < ${to}${sql.join(filters, sql``)}`;
}

function monthsArm(s: SliceStatement, m: MonthsArm): RawBuilder<unknown> {
  const period = bucketOf(sql.ref("month"), m.thresholds, m.periods);
  const filters = s.filters.map(([, id]) => sql` and group_id = ${id}`);
  return sql`select ${period} as period, group_id as g0, ${sql.join(ALIASES)} from usage_months
    where tenant_id = ${s.tenantId} and field = ${m.field} and month >= ${m.from} and month < ${m.to}${sql.join(filters, sql``)}`;
}

/** The statement of one slice: at most `limit` rows of it, after the cursor's. */
export function sliceStatement(s: SliceStatement): RawBuilder<Record<string, unknown>> {
  const arms = [...s.ranges.map((range) => recordsArm(s, range)), ...(s.months === undefined ? [] : [monthsArm(s, s.months)])];
  const keys = [sql.ref("period"), ...s.groupBy.map((_, i) => sql.ref(`g${i}`))];
  const sums = ALIASES.map((alias) => sql`sum(${alias}) as ${alias}`);
  const after = s.after === undefined ? sql`` : sql` where (${sql.join(keys)}) > (${sql.join([s.after.period, ...s.after.groups])})`;
  return sql`select * from (select ${sql.join(keys)}, ${sql.join(sums)} from (${sql.join(arms, sql` union all `)}) as u
    group by ${sql.join(keys)}) as grouped${after} order by ${sql.join(keys)} limit ${sql.lit(s.limit)}`;
}

/** A row of the statement as a UsageRow. */
export function usageRowOf(row: Record<string, unknown>, groups: number): UsageRow {
  return {
    period: Number(row.period),
    groups: Array.from({ length: groups }, (_, i) => String(row[`g${i}`])),
    counts: COUNTERS.map((c) => Number(row[c])),
  };
}
