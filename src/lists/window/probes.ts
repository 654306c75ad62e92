/**
 * The statements that find what a walk learns and its cursors carry (window/plan.ts): its
 * tenant's span, and a wide window's bracket on its second page. Each value they return is one
 * or two index probes.
 */
import { sql, type Compilable, type CompiledQuery, type Kysely, type SelectQueryBuilder } from "kysely";
import type { Collection } from "../../collections/define.js";
import type { Slots } from "../../storage/query-template.js";
import type { Schema } from "../../storage/schema.js";
import type { ListQuery } from "../list.query.js";
import { readBy, tenantFor } from "../list.sql.js";
import { bucketOf, EDGE_LEVEL, LEVELS, weekOf } from "./buckets.js";
import { MAX_LATE_ARMS, type Bracket, type Range, type Span } from "./plan.js";
import { namedBuckets, slotsOf } from "./statement.js";
import { tiles } from "./tiling.js";

type Probed = number | string | null;

export interface SpanRow {
  late_low: Probed;
  late_high: Probed;
  week_low: Probed;
  week_high: Probed;
  newest: Probed;
}

/**
 * A tenant's span: the first and last 8-hour bucket of its late rows and their first and last
 * event date in it, the first and last event week of its rows, and its newest createdAt (on time
 * or late), as of which the span holds.
 */
export function spanStatement(db: Kysely<Schema>, collection: Collection, s: Slots): Compilable<SpanRow> {
  const table = collection.table as "withdrawals";
  const tenant = tenantFor(db, s, 2);
  // Aliased, so that readBy names the weeks' index for the weeks' probes alone.
  const rows = () => db.selectFrom(`${table} as v`).where("v.tenant_id", "=", tenant.ref);
  const bucket = bucketOf(EDGE_LEVEL);
  const lateEnd = (direction: "asc" | "desc") => {
    const lateRows = () => rows().where(bucket, "is not", null);
    const edge = lateRows().select(bucket.as("bucket")).orderBy(bucket, direction).limit(sql.lit(1));
    const at = lateRows().where(bucket, "=", edge);
    return direction === "asc"
      ? at.select((eb) => eb.fn.min("v.late_event_at").as("at"))
      : at.select((eb) => eb.fn.max("v.late_event_at").as("at"));
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
  const range = (low: Probed | undefined, high: Probed | undefined): Range | null =>
    low === null || low === undefined || high === null || high === undefined ? null : [Number(low), Number(high)];
  return {
    span: { late: range(row?.late_low, row?.late_high), weeks: range(row?.week_low, row?.week_high) },
    newest: row?.newest === null || row?.newest === undefined ? null : Number(row.newest),
  };
}

/**
 * A bracket statement's values and shape: a bucket per arm of a tiling of the late rows dated
 * before the window (`p...`) and after it (`q...`), grouped and padded as a page's, each reaching
 * past the tenant's late rows freely; undefined when either takes more than MAX_LATE_ARMS.
 */
export function bracketValues(
  { since, until }: Pick<ListQuery, "since" | "until">,
  late: Range,
): { values: Record<string, number | null>; shape: string; arms: number } | undefined {
  const before = since !== undefined && late[0] < since ? tiles(late[0], since - 1, [-Infinity, since - 1], MAX_LATE_ARMS) : [];
  const after = until !== undefined && late[1] > until ? tiles(until + 1, late[1], [until + 1, Infinity], MAX_LATE_ARMS) : [];
  if (before.length > MAX_LATE_ARMS || after.length > MAX_LATE_ARMS) return undefined;
  const values: Record<string, number | null> = {};
  if (since !== undefined) values.since = since;
  if (until !== undefined) values.until = until;
  const shape = `${namedBuckets(values, before, "p")};${namedBuckets(values, after, "q")}`;
  return {
    values,
    shape,
    arms: before.length + after.length,
  };
}

export type BracketRow = Record<string, Probed>;

/**
 * The bracket of a walk whose cursor is `s.afterKey`: for each bucket of late rows dated before
 * the window, the newest createdAt below the cursor, and for each dated after it, the oldest (an
 * edge, which reaches into the window, checks the event date on its entries).
 */
export function bracketStatement(db: Kysely<Schema>, collection: Collection, s: Slots): Compilable<BracketRow> {
  const table = collection.table as "withdrawals";
  const tenant = tenantFor(db, s, 2);
  const probe = (side: "p" | "q", level: (typeof LEVELS)[number], slot: Slots[string], edge: boolean) => {
    const bucket = bucketOf(level);
    let q: SelectQueryBuilder<Schema, "withdrawals", { created_at: number }> = db
      .selectFrom(table)
      .select("created_at")
      .where("tenant_id", "=", tenant.ref)
      .where(bucket, "=", slot)
      .where(bucket, "is not", null);
    if (edge) q = side === "p" ? q.where("late_event_at", "<", s.since) : q.where("late_event_at", ">", s.until);
    if (side === "p") q = q.where((eb) => eb(eb.refTuple("created_at", "id"), "<", eb.tuple(s.afterKey, s.afterId)));
    return q.orderBy("created_at", side === "p" ? "desc" : "asc").limit(sql.lit(1));
  };
  const columns = (["p", "q"] as const).flatMap((side) =>
    [
      ...slotsOf(s, `${side}edge`).map((slot) => probe(side, EDGE_LEVEL, slot, true)),
      ...LEVELS.flatMap((level) => slotsOf(s, `${side}b${level}`).map((slot) => probe(side, level, slot, false))),
    ].map((q, i) => sql`(${q}) as ${sql.ref(`${side}${i}`)}`),
  );
  const statement = sql<BracketRow>`${tenant.with}select ${sql.join(columns)}`;
  return { compile: () => statement.compile(db) as CompiledQuery<BracketRow> };
}

/** The bracket a bracket statement found. */
export function bracketOf(row: BracketRow | undefined): Bracket {
  const found = (side: "p" | "q") =>
    Object.entries(row ?? {}).flatMap(([name, at]) => (name.startsWith(side) && at !== null && at !== undefined ? [Number(at)] : []));
  const [before, after] = [found("p"), found("q")];
  return { above: before.length === 0 ? null : Math.max(...before), below: after.length === 0 ? null : Math.min(...after) };
}
