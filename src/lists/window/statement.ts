/**
 * The statement of a page of a time window, by its plan (window/plan.ts), and the statement
 * that finds a tenant's span. The window filters on the event date and keeps the list's order,
 * so no one index range serves it; instead each arm reads an index already in the list's order,
 * the event date checked where an arm may hold rows outside the window, and the arms are merged.
 */
import { sql, type Compilable, type CompiledQuery, type Kysely } from "kysely";
import type { Collection } from "../../collections/define.js";
import { SLACK_MS } from "../../collections/late-event.js";
import type { Slots } from "../../storage/query-template.js";
import type { Schema } from "../../storage/schema.js";
import type { ListQuery } from "../list.query.js";
import { filtered, merged, readBy, tenantFor, type ArmsTenant } from "../list.sql.js";
import { LIST_COLUMNS, type ListRow, type RowsQuery } from "../list.shape.js";
import { bucketOf, EDGE_LEVEL, LEVELS, weekOf, type Level } from "./buckets.js";
import type { Span, WindowPlan } from "./plan.js";

/**
 * A plan's values for the page's statement, and its shape: what names the SQL text. Arms are
 * grouped by level and their number rounded up to a power of two, the spare arms given no
 * bucket (an empty index range), so that a list has a few dozen window statements, not one per
 * tiling.
 */
export function windowValues(query: Pick<ListQuery, "since" | "until">, plan: WindowPlan): { values: Record<string, number | null>; shape: string } {
  const { since, until } = query;
  const values: Record<string, number | null> = {};
  if (since !== undefined) Object.assign(values, { since, sinceLower: since - SLACK_MS });
  if (until !== undefined) Object.assign(values, { until, untilUpper: until + SLACK_MS });
  switch (plan.kind) {
    case "tiles": {
      const groups = groupsOf(plan);
      for (const [name, buckets] of Object.entries(groups)) buckets.forEach((bucket, i) => (values[`${name}_${i}`] = bucket));
      return { values, shape: `tiles:${Object.values(groups).map((g) => g.length).join(",")}` };
    }
    case "weeks": {
      const weeks = padded(Array.from({ length: plan.last - plan.first + 1 }, (_, i) => plan.first + i));
      weeks.forEach((week, i) => (values[`w_${i}`] = week));
      return { values, shape: `weeks:${weeks.length}` };
    }
    case "late-by-created":
    case "name-index":
      return { values, shape: plan.kind };
  }
}

/** The tiles' buckets by arm kind: edges (level 1, event date checked), then each level's. */
function groupsOf(plan: Extract<WindowPlan, { kind: "tiles" }>): Record<string, (number | null)[]> {
  const groups: Record<string, (number | null)[]> = { edge: plan.tiles.filter((t) => t.edge).map((t) => t.bucket) };
  for (const level of LEVELS) groups[`b${level}`] = plan.tiles.filter((t) => !t.edge && t.level === level).map((t) => t.bucket);
  return Object.fromEntries(Object.entries(groups).map(([name, buckets]) => [name, padded(buckets)]));
}

/** Spare nulls up to the next power of two. */
function padded<T>(items: T[]): (T | null)[] {
  const size = items.length === 0 ? 0 : 2 ** Math.ceil(Math.log2(items.length));
  return [...items, ...Array<null>(size - items.length).fill(null)];
}

/** The numbered slots named `prefix_0`, `prefix_1`, ... in order. */
const slotsOf = (s: Slots, prefix: string) =>
  Object.keys(s)
    .filter((name) => name.startsWith(`${prefix}_`))
    .map((name) => s[name] as Slots[string]);

/**
 * What ends the on-time arm's createdAt range at the top: one bound, the tighter of the cursor
 * and `until + SLACK` (the other is then implied), so that its index range starts where the page does.
 */
export type OnTimeTop = "cursor" | "until" | "none";

export function onTimeTop({ until }: Pick<ListQuery, "until">, afterKey: number | undefined): OnTimeTop {
  if (afterKey !== undefined && (until === undefined || afterKey <= until + SLACK_MS)) return "cursor";
  return until === undefined ? "none" : "until";
}

/** The page's statement in the window's plan (`kind` and `shape` as windowValues made them). */
export function windowPage(
  db: Kysely<Schema>,
  collection: Collection,
  kind: WindowPlan["kind"],
  s: Slots,
  take: number,
  top: OnTimeTop,
): Compilable<ListRow> {
  const base = (tenant: ArmsTenant, withCursor = true) =>
    filtered(db, collection, kind === "tiles" || kind === "late-by-created" ? "created" : "name", s, withCursor, tenant.ref).select(
      LIST_COLUMNS,
    );
  const inWindow = (q: RowsQuery, column: "event_at" | "late_event_at") => {
    if (s.since !== undefined) q = q.where(column, ">=", s.since);
    return s.until === undefined ? q : q.where(column, "<=", s.until);
  };
  // On time: stored within SLACK of the event, so within the window widened by SLACK; the event date checked on the entry.
  const onTime = (tenant: ArmsTenant) => {
    let arm = inWindow(base(tenant, top === "cursor").where("late_event_at", "is", null), "event_at");
    if (top === "until") arm = arm.where("created_at", "<=", s.untilUpper);
    return s.sinceLower === undefined ? arm : arm.where("created_at", ">=", s.sinceLower);
  };
  switch (kind) {
    case "tiles": {
      const edges = slotsOf(s, "edge");
      const levels = LEVELS.map((level) => ({ level, buckets: slotsOf(s, `b${level}`) }));
      const tenant = tenantFor(db, s, 1 + edges.length + levels.reduce((n, l) => n + l.buckets.length, 0));
      // The bucket's `is not null` is implied by its equality, but stated: it is the partial index's condition word for word.
      const lateArm = (level: Level, bucket: Slots[string]) =>
        base(tenant).where(bucketOf(level), "=", bucket).where(bucketOf(level), "is not", null);
      const arms = [
        onTime(tenant),
        ...edges.map((bucket) => inWindow(lateArm(EDGE_LEVEL, bucket), "late_event_at")),
        ...levels.flatMap(({ level, buckets }) => buckets.map((bucket) => lateArm(level, bucket))),
      ];
      return merged(db, arms, take, tenant, "created");
    }
    case "late-by-created": {
      const tenant = tenantFor(db, s, 2);
      const late = inWindow(base(tenant).where("late_event_at", "is not", null), "late_event_at");
      return merged(db, [onTime(tenant), late], take, tenant, "created");
    }
    case "weeks": {
      const weeks = slotsOf(s, "w");
      const tenant = tenantFor(db, s, weeks.length);
      const arms = weeks.map((week) => inWindow(base(tenant).where(weekOf, "=", week), "event_at"));
      const table = collection.table;
      return readBy(db, merged(db, arms, take, tenant, "name"), table, `${table}_event_week_name`);
    }
    case "name-index": {
      const tenant = tenantFor(db, s, 1);
      return merged(db, [inWindow(base(tenant), "event_at")], take, tenant, "name");
    }
  }
}

export interface SpanRow {
  late_low: number | string | null;
  late_high: number | string | null;
  week_low: number | string | null;
  week_high: number | string | null;
  newest: number | string | null;
}

/**
 * The statement of a tenant's span, each figure one or two index probes: the first and last
 * 8-hour bucket of its late rows and their first and last event date in it, the first and last
 * event week of its rows, and its newest createdAt (the newest on time or late), as of which the
 * span holds.
 */
export function spanStatement(db: Kysely<Schema>, collection: Collection, s: Slots): Compilable<SpanRow> {
  const table = collection.table as "withdrawals";
  const tenant = tenantFor(db, s, 2);
  // Aliased, so that readBy names the weeks' index for the weeks' probes alone.
  const rows = () => db.selectFrom(`${table} as v`).where("v.tenant_id", "=", tenant.ref);
  const bucket = bucketOf(EDGE_LEVEL);
  const lateEnd = (direction: "asc" | "desc") => {
    const lateRows = () => rows().where(bucket, "is not", null);
    const edgeBucket = lateRows().select(bucket.as("bucket")).orderBy(bucket, direction).limit(sql.lit(1));
    const at = lateRows().where(bucket, "=", edgeBucket);
    return direction === "asc" ? at.select((eb) => eb.fn.min("v.late_event_at").as("at")) : at.select((eb) => eb.fn.max("v.late_event_at").as("at"));
  };
  const weekEnd = (direction: "asc" | "desc") =>
    db.selectFrom(table).select(weekOf.as("week")).where("tenant_id", "=", tenant.ref).orderBy(weekOf, direction).limit(sql.lit(1));
  const newest = (late: "is" | "is not") =>
    rows().select("v.created_at").where("v.late_event_at", late, null).orderBy("v.created_at", "desc").limit(sql.lit(1));
  const probes = db.selectNoFrom([
    lateEnd("asc").as("late_low"),
    lateEnd("desc").as("late_high"),
    weekEnd("asc").as("week_low"),
    weekEnd("desc").as("week_high"),
    newest("is").as("newest_on_time"),
    newest("is not").as("newest_late"),
  ]);
  const statement = sql<SpanRow>`${tenant.with}select late_low, late_high, week_low, week_high, case when newest_late is null or newest_on_time > newest_late then newest_on_time else newest_late end as newest from (${probes}) as probes`;
  return readBy(db, { compile: () => statement.compile(db) as CompiledQuery<SpanRow> }, table, `${table}_event_week_name`);
}

/** The span a span statement found, and the tenant's newest createdAt (null: no row, or the key is no good). */
export function spanOf(row: SpanRow | undefined): { span: Span; newest: number | null } {
  const range = (low: SpanRow[keyof SpanRow] | undefined, high: SpanRow[keyof SpanRow] | undefined) =>
    low === null || low === undefined || high === null || high === undefined ? null : ([Number(low), Number(high)] as const);
  return {
    span: { late: range(row?.late_low, row?.late_high), weeks: range(row?.week_low, row?.week_high) },
    newest: row?.newest === null || row?.newest === undefined ? null : Number(row.newest),
  };
}
