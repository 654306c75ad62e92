/**
 * The time window's pieces on their own (src/lists/window/): the tiling of a range of event
 * dates by buckets, the plan a page takes from its query and its walk's span, the span as a
 * cursor carries it, and the bounded set of statements a list's windows compile to.
 */
import { describe, expect, it } from "vitest";
import fc from "fast-check";
import { withdrawals } from "../src/collections/registry.js";
import { parseListQuery } from "../src/lists/list.query.js";
import { pageQuery } from "../src/lists/list.repository.js";
import { listOrder } from "../src/lists/list.shape.js";
import { bucketAt, bucketStart, EDGE_LEVEL, weekAt, type Level } from "../src/lists/window/buckets.js";
import {
  MAX_LATE_ARMS,
  NAME_WEEK_ARMS,
  needsSpan,
  planOf,
  spanOfCursor,
  spanToCursor,
  wantsBracket,
  withinBracket,
  type Span,
} from "../src/lists/window/plan.js";
import { tiles } from "../src/lists/window/tiling.js";
import { useServer } from "./support/harness.js";

const server = useServer();

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const YEAR = 365 * DAY;
const TOP: Level = 3;
const lengthOf = (level: Level) => bucketStart(level, 1) - bucketStart(level, 0);

const spansOf = (tiling: ReturnType<typeof tiles>) =>
  tiling
    .map((tile) => ({ ...tile, start: bucketStart(tile.level, tile.bucket), end: bucketStart(tile.level, tile.bucket + 1) - 1 }))
    .sort((a, b) => a.start - b.start);

describe("the tiling of a range of event dates", () => {
  it("covers exactly the range but for the edges, with disjoint buckets, at most seven of a level on either side of the largest", () => {
    const range = fc.tuple(fc.integer({ min: -20 * YEAR, max: 20 * YEAR }), fc.integer({ min: 0, max: 12 * YEAR }));
    fc.assert(
      fc.property(range, ([low, length]) => {
        const high = low + length;
        const spans = spansOf(tiles(low, high));
        // Disjoint and gapless from the first bucket's start to the last one's end...
        spans.slice(1).forEach((span, i) => expect(span.start).toBe(spans[i]!.end + 1));
        // ...which is the range itself, but for the buckets at either end, which it covers in part.
        expect(spans[0]!.start).toBeLessThanOrEqual(low);
        expect(spans.at(-1)!.end).toBeGreaterThanOrEqual(high);
        // An edge is a bucket of eight hours at an end, the smallest that has an index.
        expect(spans[0]!.start === low || (spans[0]!.edge && spans[0]!.level === EDGE_LEVEL)).toBe(true);
        expect(spans.at(-1)!.end === high || (spans.at(-1)!.edge && spans.at(-1)!.level === EDGE_LEVEL)).toBe(true);
        expect(
          spans.filter((span) => span.edge).every((span) => span.level === EDGE_LEVEL && (span.start <= low || span.end >= high)),
        ).toBe(true);
        for (const level of [1, 2] as const) expect(spans.filter((span) => span.level === level).length).toBeLessThanOrEqual(2 * 7 + 2);
        expect(spans.filter((span) => span.level === TOP).length).toBeLessThanOrEqual(Math.ceil(length / lengthOf(TOP)) + 1);
      }),
      { numRuns: 2000 },
    );
  });

  it("reaches past the range only into the room around it, with fewer buckets for it", () => {
    // Room below and above the range: none, some, or unbounded (no late row on that side).
    const room = fc.oneof(fc.constant(0), fc.integer({ min: 1, max: 2 * YEAR }), fc.constant(Infinity));
    const range = fc.tuple(fc.integer({ min: -20 * YEAR, max: 20 * YEAR }), fc.integer({ min: 0, max: 12 * YEAR }), room, room);
    fc.assert(
      fc.property(range, ([low, length, below, above]) => {
        const high = low + length;
        const outer: [number, number] = [low - below, high + above];
        const tiling = tiles(low, high, outer);
        const spans = spansOf(tiling);
        spans.slice(1).forEach((span, i) => expect(span.start).toBe(spans[i]!.end + 1));
        expect(spans[0]!.start).toBeLessThanOrEqual(low);
        expect(spans.at(-1)!.end).toBeGreaterThanOrEqual(high);
        // Every bucket lies within the room but an edge of eight hours at most, which checks the event date.
        for (const span of spans) {
          if (span.edge) expect(span.level === EDGE_LEVEL && (span.start < outer[0] || span.end > outer[1])).toBe(true);
          else expect(span.start >= outer[0] && span.end <= outer[1]).toBe(true);
        }
        expect(tiling.length).toBeLessThanOrEqual(tiles(low, high).length);
        if (below === Infinity && above === Infinity) expect(tiling.length).toBeLessThanOrEqual(Math.ceil(length / lengthOf(TOP)) + 1);
      }),
      { numRuns: 2000 },
    );
  });

  it("numbers buckets from year 1, so that the first instant of year 1 is bucket 0 of every level", () => {
    const first = new Date(0);
    first.setUTCFullYear(1, 0, 1);
    expect(bucketAt(EDGE_LEVEL, first.getTime())).toBe(0);
    expect(bucketAt(TOP, first.getTime() - 1)).toBe(-1);
    expect(weekAt(first.getTime())).toBe(0);
  });
});

describe("a window's plan", () => {
  const query = (q: string) => parseListQuery(withdrawals, q);
  const at = (iso: string) => Date.parse(iso);

  it("needs its tenant's span when it is open-ended, or on a later page when its own tiling in createdAt order takes many arms", () => {
    expect(needsSpan(query("createdSince=2026-01-01T00:00:00Z"), "created", false)).toBe(true);
    expect(needsSpan(query("createdUntil=2026-01-01T00:00:00Z"), "name", false)).toBe(true);
    expect(needsSpan(query("createdSince=2026-01-01T00:00:00Z&createdUntil=2026-01-01T06:00:00Z"), "created", false)).toBe(false);
    expect(needsSpan(query("createdSince=2025-01-01T00:00:00Z&createdUntil=2026-01-01T00:00:00Z"), "created", false)).toBe(true);
    // Its first page reads its own tiling, in one statement, unless that takes more than MAX_LATE_ARMS.
    expect(needsSpan(query("createdSince=2025-01-01T00:00:00Z&createdUntil=2026-01-01T00:00:00Z"), "created", true)).toBe(false);
    expect(needsSpan(query("createdSince=2020-01-01T00:00:00Z&createdUntil=2026-01-01T00:00:00Z"), "created", true)).toBe(true);
    expect(needsSpan(query("createdSince=2026-01-01T00:00:00Z"), "created", true)).toBe(true);
    expect(needsSpan(query("createdSince=2025-01-01T00:00:00Z&createdUntil=2026-01-01T00:00:00Z&name=a"), "name", false)).toBe(false);
  });

  it("tiles only where the tenant has late rows, and reads none when it has none", () => {
    const year = query("createdSince=2025-01-01T00:00:00Z&createdUntil=2026-01-01T00:00:00Z");
    const span: Span = { late: [at("2025-06-01T10:00:00Z"), at("2025-06-01T11:00:00Z")], weeks: null };
    const plan = planOf(year, "created", span);
    expect(plan).toEqual({ kind: "tiles", tiles: tiles(span.late![0], span.late![1], [-Infinity, Infinity]) });
    expect(plan.kind === "tiles" && plan.tiles.length).toBe(1);
    expect(planOf(year, "created", { late: null, weeks: null })).toEqual({ kind: "tiles", tiles: [] });
  });

  it("reads late rows whose dates span more than MAX_LATE_ARMS buckets as one arm by createdAt", () => {
    const all = query("createdSince=1970-01-01T00:00:00Z");
    expect(planOf(all, "created", { late: [0, at("2026-01-01T00:00:00Z")], weeks: null })).toEqual({
      kind: "late-by-created",
      above: null,
    });
    expect(tiles(0, at("2026-01-01T00:00:00Z")).length).toBeGreaterThan(MAX_LATE_ARMS);
  });

  it("in name order, reads a window of at most NAME_WEEK_ARMS weeks by week, and a wider one by the name index", () => {
    const since = at("2026-03-02T00:00:00Z"); // a Monday
    const weeks = (n: number) =>
      query(`name=a&createdSince=${new Date(since).toISOString()}&createdUntil=${new Date(since + n * 7 * DAY - 1).toISOString()}`);
    expect(planOf(weeks(NAME_WEEK_ARMS), "name", undefined)).toEqual({
      kind: "weeks",
      first: weekAt(since),
      last: weekAt(since) + NAME_WEEK_ARMS - 1,
    });
    expect(planOf(weeks(NAME_WEEK_ARMS + 1), "name", undefined)).toEqual({ kind: "name-index" });
    // Open at its end: up to the tenant's last week; beyond its weeks, one week's arm that finds nothing.
    const open = query(`name=a&createdSince=${new Date(since).toISOString()}`);
    expect(planOf(open, "name", { late: null, weeks: [weekAt(since) - 50, weekAt(since) + 2] })).toEqual({
      kind: "weeks",
      first: weekAt(since),
      last: weekAt(since) + 2,
    });
    expect(planOf(open, "name", { late: null, weeks: [weekAt(since) - 50, weekAt(since) + 20] })).toEqual({ kind: "name-index" });
    expect(planOf(open, "name", { late: null, weeks: [weekAt(since) - 50, weekAt(since) - 3] })).toEqual({
      kind: "weeks",
      first: weekAt(since),
      last: weekAt(since),
    });
    expect(listOrder(open)).toBe("name");
  });
});

describe("a wide window's bracket", () => {
  const tiled = planOf({ since: Date.UTC(2025, 0, 1), until: Date.UTC(2026, 0, 1) }, "created", undefined);

  it("is wanted by a tiling of many arms, and read between its `above` and `below` only", () => {
    expect(wantsBracket(tiled)).toBe(true);
    expect(wantsBracket(planOf({ since: 0, until: 3_600_000 }, "created", undefined))).toBe(false);
    const bracket = { above: 1000, below: 2000 };
    // A cursor at `below` may have rows of its createdAt below it dated after the window; one at `above` has none above it.
    for (const [at, kind] of [
      [999, "tiles"],
      [1000, "tiles"],
      [1001, "late-by-created"],
      [1999, "late-by-created"],
      [2000, "tiles"],
    ] as const)
      expect(withinBracket(tiled, bracket, at).kind, String(at)).toBe(kind);
    expect(withinBracket(tiled, bracket, 1500)).toEqual({ kind: "late-by-created", above: 1000 });
    expect(withinBracket(tiled, { above: null, below: null }, 5)).toEqual({ kind: "late-by-created", above: null });
    expect(withinBracket(tiled, null, 1500)).toBe(tiled);
    expect(withinBracket(tiled, undefined, 1500)).toBe(tiled);
  });
});

describe("a walk's span in its cursors", () => {
  it("comes back as it went, and a cursor that carries none or another build's plan carries no span", () => {
    const span: Span = { late: [-5, 1_800_000_000_000], weeks: [100, 105_000] };
    expect(spanOfCursor(spanToCursor(span))).toEqual(span);
    expect(spanOfCursor(spanToCursor({ late: null, weeks: null }))).toEqual({ late: null, weeks: null });
    for (const bracket of [null, { above: null, below: 7 }, { above: 3, below: null }])
      expect(spanOfCursor(spanToCursor({ ...span, bracket }))).toEqual({ ...span, bracket });
    expect(spanOfCursor('{"late":null,"weeks":null,"bracket":{"above":"1","below":null}}')).toBeUndefined();
    for (const other of [undefined, "late:1,2", "name-index", "{", '{"late":[2,1],"weeks":null}', '{"late":[1.5,2],"weeks":null}', "{}"])
      expect(spanOfCursor(other), String(other)).toBeUndefined();
  });
});

describe("the statements of a list's windows", () => {
  /** The ways a page's statement varies but for its window: with or without a cursor, at a limit of each size. */
  const LIMITS = [1, 10, 11, 20, 21, 50, 51, 100];
  /** At most this many statements per list: see docs/architecture.md, "Time window". */
  const BOUND = 1_000;

  it("come in a bounded set of shapes, whatever the window, its span, the limit and the cursor", () => {
    const db = server().storage.db;
    const texts = new Set<string>();
    const instant = fc.integer({ min: Date.UTC(1900, 0, 1), max: Date.UTC(2100, 0, 1) });
    const range = fc.tuple(instant, fc.integer({ min: 0, max: 30 * YEAR })).map(([low, length]) => [low, low + length] as const);
    fc.assert(
      fc.property(
        fc.option(instant),
        fc.option(instant),
        fc.option(range),
        fc.boolean(),
        fc.constantFrom(...LIMITS),
        fc.boolean(),
        (a, b, late, named, limit, cursor) => {
          if (a === null && b === null) return;
          const [since, until] = a !== null && b !== null && a > b ? [b, a] : [a, b];
          const bounds = [
            since === null ? "" : `&createdSince=${new Date(since).toISOString()}`,
            until === null ? "" : `&createdUntil=${new Date(until).toISOString()}`,
          ];
          const q = parseListQuery(withdrawals, `limit=${limit}${named ? "&name=ma" : ""}${bounds.join("")}`);
          const span: Span = {
            late: late === null ? null : [late[0], late[1]],
            weeks: late === null ? null : [weekAt(late[0]), weekAt(late[1])],
          };
          const order = listOrder(q);
          const after = cursor ? { key: order === "created" ? (until ?? since ?? 0) + (limit % 3) * DAY : "ma", id: "w-1" } : undefined;
          const planned = planOf(q, order, needsSpan(q, order, !cursor) ? span : undefined);
          // A later page within its bracket: its late rows by createdAt above `above`, or all of them.
          const bracket = late === null ? null : { above: limit % 2 === 0 ? late[0] : null, below: null };
          const plan = after !== undefined && typeof after.key === "number" ? withinBracket(planned, bracket, after.key) : planned;
          texts.add(pageQuery(db, withdrawals, "hash", q, after, limit + 1, plan).sql);
        },
      ),
      { numRuns: 20_000 },
    );
    expect(texts.size).toBeGreaterThan(50);
    expect(texts.size).toBeLessThanOrEqual(BOUND);
  });
});
