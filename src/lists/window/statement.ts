/**
 * The statement of a page of a time window, by its plan (window/plan.ts). The window filters on the event date and keeps the list's order,
 * so no one index range serves it; instead each arm reads an index already in the list's order,
 * the event date checked where an arm may hold rows outside the window, and the arms are merged.
 */
import type { Compilable, Kysely } from "kysely";
import type { Collection } from "../../collections/define.js";
import { SLACK_MS } from "../../collections/late-event.js";
import type { Slots } from "../../storage/query-template.js";
import type { Schema } from "../../storage/schema.js";
import type { ListQuery } from "../list.query.js";
import { filtered, merged, readBy, tenantFor, type ArmsTenant } from "../list.sql.js";
import { LIST_COLUMNS, type ListRow, type RowsQuery } from "../list.shape.js";
import { bucketOf, EDGE_LEVEL, LEVELS, weekOf, type Level } from "./buckets.js";
import type { WindowPlan } from "./plan.js";
import type { Tile } from "./tiling.js";

/**
 * A plan's values for the page's statement, and its shape: what names the SQL text. Arms are
 * grouped by level and their number rounded up to a power of two, the spare arms given no
 * bucket (an empty index range), so that the statements of a list's windows are a bounded set,
 * not one per tiling.
 */
export function windowValues(
  query: Pick<ListQuery, "since" | "until">,
  plan: WindowPlan,
): { values: Record<string, number | null>; shape: string } {
  const { since, until } = query;
  const values: Record<string, number | null> = {};
  if (since !== undefined) Object.assign(values, { since, sinceLower: since - SLACK_MS });
  if (until !== undefined) Object.assign(values, { until, untilUpper: until + SLACK_MS });
  switch (plan.kind) {
    case "tiles": {
      const counts = namedBuckets(values, plan.tiles, "");
      return { values, shape: `tiles:${counts}` };
    }
    case "late-by-created": {
      if (plan.above === null) return { values, shape: plan.kind };
      // Every arm starts above `above`: the page's rows at or below it are another statement's
      // (list.service.ts). The on-time arm's lower bound is the tighter of its own and that one.
      values.createdLow = plan.above + 1;
      values.sinceLower = Math.max(values.sinceLower ?? -Infinity, plan.above + 1);
      return { values, shape: `${plan.kind}:above` };
    }
    case "weeks": {
      const size = padded(plan.last - plan.first + 1);
      for (let i = 0; i < size; i += 1) values[`w_${i}`] = plan.first + i <= plan.last ? plan.first + i : null;
      return { values, shape: `weeks:${size}` };
    }
    case "name-index":
      return { values, shape: plan.kind };
  }
}

/** The groups of a tiling's arms: its edges (level 1, event date checked), then each level's whole buckets. */
const GROUPS = [
  { name: "edge", holds: (t: Tile) => t.edge },
  ...LEVELS.map((level) => ({ name: `b${level}`, holds: (t: Tile) => !t.edge && t.level === level })),
];

/**
 * Names each tile's bucket in `values` by its group (`<prefix>edge_0`, `<prefix>b2_1`, ...), each
 * group padded with nulls (see windowValues); the groups' sizes, as a shape names them.
 */
export function namedBuckets(values: Record<string, number | null>, tiles: readonly Tile[], prefix: string): string {
  const sizes: number[] = [];
  for (const { name, holds } of GROUPS) {
    let n = 0;
    for (const tile of tiles) if (holds(tile)) values[`${prefix}${name}_${n++}`] = tile.bucket;
    const size = padded(n);
    for (; n < size; n += 1) values[`${prefix}${name}_${n}`] = null;
    sizes.push(size);
  }
  return sizes.join(",");
}

/** A group's size with its spare arms: the next power of two. */
function padded(n: number): number {
  return n === 0 ? 0 : 2 ** Math.ceil(Math.log2(n));
}

/** The numbered slots named `prefix_0`, `prefix_1`, ... in order. */
export const slotsOf = (s: Slots, prefix: string) =>
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
      let late = inWindow(base(tenant).where("late_event_at", "is not", null), "late_event_at");
      if (s.createdLow !== undefined) late = late.where("created_at", ">=", s.createdLow);
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
