/**
 * The time window's arms (see src/lists/window.ts) at their edges: records whose event date
 * sits on and just outside the window's bounds, stored at the slack's boundaries before and
 * after it. Every window shape, read at several page sizes, returns exactly the records in the
 * window, once each, newest first by createdAt. Late records are read by the buckets of their
 * event dates that tile the window, so they are checked across bucket boundaries of every
 * level too, and the tiling itself is checked over random ranges.
 */
import { describe, expect, it, vi } from "vitest";
import fc from "fast-check";
import { BUCKET_LEVELS_MS, BUCKET_ORIGIN_MS, lateEventAt, SLACK_MS } from "../src/collections/late-event.js";
import { withdrawals } from "../src/collections/registry.js";
import { sortKey } from "../src/collections/sort-key.js";
import { parseListQuery } from "../src/lists/list.query.js";
import { pageQuery } from "../src/lists/list.repository.js";
import { EVENT_SPAN_FRESH_MS, foundEventSpan, needsLateRange, probedPlan, windowPlan } from "../src/lists/list.service.js";
import {
  BRACKET_ARMS,
  byTops,
  EDGE_LEVEL,
  KEYS_SHARE,
  NAME_INDEX_PAGES,
  NAME_WEEK_ARMS,
  NAME_WEEK_MS,
  NAME_PROBE_PAGES,
  RECENT_WIDTH_MS,
  SPAN_SHARE,
  spanOfWeeks,
  tiles,
  TOPS_ARMS,
  TOPS_RANK,
  WINDOW_FIRST_BOUND,
  WINDOW_KEYS_BOUND,
} from "../src/lists/window.js";
import { compareCodePoints, idsAfter, KeyLists, KEYS_FRESH_MS, KEYS_LATE_BOUND } from "../src/lists/window-keys.js";
import { hashKey } from "../src/platform/keys.js";
import { POSTGRES, SQLITE } from "../src/storage/engine.js";
import { ENGINE } from "./support/databases.js";
import { withdrawal } from "./support/factories.js";
import { get, newTenant, planOfCursor, readAll, sync, useServer, type Reply, type TestTenant } from "./support/harness.js";

const server = useServer();

const SINCE = Date.UTC(2026, 4, 1, 8, 0, 0, 0);
const UNTIL = SINCE + 2 * SLACK_MS;
const EVENTS = [SINCE - 1, SINCE, SINCE + 1, UNTIL - 1, UNTIL, UNTIL + 1];
const OFFSETS = [-SLACK_MS - 1, -SLACK_MS, 0, SLACK_MS, SLACK_MS + 1];

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * How many times wider than they were written the windows of the walks that pick their plan on
 * their first page are (choosingPage): wide enough that none spans NAME_WEEK_ARMS weeks or
 * fewer, which is read by week instead.
 */
const TIME_SCALE = 2000;

interface Stored {
  id: string;
  event: number;
  createdAt: number;
}

/**
 * Syncs the records in ascending createdAt, those sharing one in one batch, so that every
 * record is stamped exactly as planned (a list's createdAt never goes backwards).
 */
async function storeAsPlanned(tenant: TestTenant, stored: Stored[]): Promise<void> {
  for (const createdAt of [...new Set(stored.map((r) => r.createdAt))].sort((a, b) => a - b)) {
    server().clock.now = createdAt;
    const batch = stored.filter((r) => r.createdAt === createdAt);
    await sync(
      server(),
      tenant,
      "withdrawals",
      batch.map((r) => withdrawal({ id: r.id, deliveredAt: iso(r.event) })),
    );
  }
  server().clock.now = undefined;
}

/** The grid of event dates and storage offsets around the slack's edges, stored as planned. */

/** The plan that the first page of a walk at limit=2 picked, as its cursor carries it. */
async function firstPagePlan(tenant: TestTenant, query: string): Promise<string | undefined> {
  const { body } = await get<{ cursor: string }>(server(), `/v1/withdrawals?limit=2&${query}`, tenant.keys.read);
  return planOfCursor(body.cursor);
}

async function storeGrid() {
  const tenant = await newTenant(server());
  const stored: Stored[] = EVENTS.flatMap((event, e) =>
    OFFSETS.map((offset, o) => ({ id: `w-${e}-${o}`, event, createdAt: event + offset })),
  );
  await storeAsPlanned(tenant, stored);
  return { tenant, stored };
}

const WINDOWS: [string, (event: number) => boolean][] = [
  [`createdSince=${iso(SINCE)}&createdUntil=${iso(UNTIL)}`, (e) => e >= SINCE && e <= UNTIL],
  [`createdSince=${iso(SINCE)}`, (e) => e >= SINCE],
  [`createdUntil=${iso(UNTIL)}`, (e) => e <= UNTIL],
  [`createdSince=${iso(UNTIL)}&createdUntil=${iso(UNTIL)}`, (e) => e === UNTIL],
];

describe("time window at the edges of its slack", () => {
  it("returns exactly the records in the window, once, newest first, at every page size", async () => {
    const { tenant, stored } = await storeGrid();
    for (const [query, inWindow] of WINDOWS) {
      const want = stored
        .filter((r) => inWindow(r.event))
        .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
        .map((r) => r.id);
      for (const limits of [[1], [2, 5], [7], [100]]) {
        const { items } = await readAll(server(), tenant.keys.read, `/v1/withdrawals?${query}`, limits);
        expect(
          items.map((r) => r.id),
          `${query} limits ${limits.join(",")}`,
        ).toEqual(want);
      }
    }
  });
});

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const MINUTE = 60_000;
/** The start of every bucket of `level` that begins at or after `ms`, counted from year 1. */
const bucketStart = (level: number, ms: number) => {
  const length = BUCKET_LEVELS_MS[level]!;
  return Math.ceil((ms + BUCKET_ORIGIN_MS) / length) * length - BUCKET_ORIGIN_MS;
};

/**
 * Records stored long after (or before) their event, on both sides of the boundaries of
 * buckets of every level (an hour to years) and of midnights around the epoch, plus some on
 * time: the tiling's every kind of arm has rows at its edges.
 */
async function storeLateAcrossBuckets() {
  const tenant = await newTenant(server());
  const first = -3 * DAY;
  const boundaries = [
    ...Array.from({ length: 11 }, (_, day) => first + day * DAY),
    ...BUCKET_LEVELS_MS.map((_, level) => bucketStart(level, first + 5 * DAY)),
  ];
  const stored: Stored[] = [];
  boundaries.forEach((boundary, b) => {
    for (const [e, event] of [boundary - 1, boundary, boundary + HOUR / 2].entries()) {
      // Synced days later, a little later than the slack, or early (a clock running ahead,
      // by a little or by days), or on time.
      for (const [o, offset] of [3 * DAY + b, SLACK_MS + 1 + e, -(SLACK_MS + 1), -2 * DAY - e, 0].entries()) {
        stored.push({ id: `d-${b}-${e}-${o}`, event, createdAt: event + offset });
      }
    }
  });
  await storeAsPlanned(tenant, stored);
  return { tenant, stored, first };
}

/** Window lengths from a minute to a year. */
const LENGTHS = [60_000, HOUR - 1, HOUR, HOUR + 1, 8 * HOUR, DAY - 1, DAY, 7 * DAY, 10 * DAY, 31 * DAY, 365 * DAY];

describe("the tiling of a window's late rows", () => {
  const YEAR = 365 * DAY;
  const top = BUCKET_LEVELS_MS.length - 1;
  const spansOf = (tiling: ReturnType<typeof tiles>) =>
    tiling
      .map((tile) => {
        const size = BUCKET_LEVELS_MS[tile.level]!;
        const start = tile.bucket * size - BUCKET_ORIGIN_MS;
        return { ...tile, start, end: start + size - 1 };
      })
      .sort((a, b) => a.start - b.start);

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
        const edgeLevel = 1;
        expect(spans.every((span) => span.level >= edgeLevel)).toBe(true);
        expect(spans[0]!.start === low || (spans[0]!.edge && spans[0]!.level === edgeLevel)).toBe(true);
        expect(spans.at(-1)!.end === high || (spans.at(-1)!.edge && spans.at(-1)!.level === edgeLevel)).toBe(true);
        expect(spans.filter((span) => span.edge).every((span) => span.level === edgeLevel && (span.start <= low || span.end >= high))).toBe(
          true,
        );
        for (let level = edgeLevel; level < top; level++)
          expect(spans.filter((span) => span.level === level).length).toBeLessThanOrEqual(2 * 7 + 2);
        expect(spans.filter((span) => span.level === top).length).toBeLessThanOrEqual(Math.ceil(length / BUCKET_LEVELS_MS[top]!) + 1);
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
          if (span.edge) expect(span.level <= 1 && (span.start < outer[0] || span.end > outer[1])).toBe(true);
          else expect(span.start >= outer[0] && span.end <= outer[1]).toBe(true);
        }
        expect(tiling.length).toBeLessThanOrEqual(tiles(low, high).length);
        if (below === Infinity && above === Infinity)
          expect(tiling.length).toBeLessThanOrEqual(Math.ceil(length / BUCKET_LEVELS_MS[top]!) + 1);
      }),
      { numRuns: 2000 },
    );
  });

  it("returns exactly the records in windows of a minute to a year, and open-ended ones, wherever they start", async () => {
    const { tenant, stored, first } = await storeLateAcrossBuckets();
    const starts = [
      first,
      first + DAY,
      first + 1,
      first - 1,
      first + DAY / 2,
      first - HOUR,
      bucketStart(2, first),
      bucketStart(3, first) - 1,
    ];
    const windows: [number | undefined, number | undefined][] = [];
    for (const length of LENGTHS) for (const start of starts) windows.push([start, start + length]);
    for (const start of starts) windows.push([start, undefined], [undefined, start]);
    for (const [since, until] of windows) {
      const want = stored
        .filter((r) => (since === undefined || r.event >= since) && (until === undefined || r.event <= until))
        .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
        .map((r) => r.id);
      for (const limits of [[1, 4], [100]]) {
        const bounds = [
          since === undefined ? [] : [`createdSince=${iso(since)}`],
          until === undefined ? [] : [`createdUntil=${iso(until)}`],
        ];
        const query = bounds.flat().join("&");
        const { items } = await readAll(server(), tenant.keys.read, `/v1/withdrawals?${query}`, limits);
        expect(
          items.map((r) => r.id),
          `${query} limits ${limits.join(",")}`,
        ).toEqual(want);
      }
    }
  }, 120_000);
});

describe("time window of a tenant with no late records", () => {
  it("returns exactly the records in the window from the on-time arm alone, open-ended or bounded", async () => {
    const tenant = await newTenant(server());
    const stored: Stored[] = Array.from({ length: 9 }, (_, i) => ({
      id: `w-${i}`,
      event: SINCE + i * HOUR,
      createdAt: SINCE + i * HOUR + 1_000,
    }));
    await storeAsPlanned(tenant, stored);
    const windows: [number | undefined, number | undefined][] = [
      [SINCE + 2 * HOUR, undefined],
      [undefined, SINCE + 5 * HOUR],
      [SINCE + 2 * HOUR, SINCE + 5 * HOUR],
      [SINCE - 400 * DAY, SINCE + 400 * DAY],
    ];
    for (const [since, until] of windows) {
      const want = stored
        .filter((r) => (since === undefined || r.event >= since) && (until === undefined || r.event <= until))
        .reverse()
        .map((r) => r.id);
      const query = [since === undefined ? "" : `createdSince=${iso(since)}`, until === undefined ? "" : `createdUntil=${iso(until)}`]
        .filter((part) => part !== "")
        .join("&");
      const { items } = await readAll(server(), tenant.keys.read, `/v1/withdrawals?${query}`, [2, 3]);
      expect(
        items.map((r) => r.id),
        query,
      ).toEqual(want);
    }
  });
});

describe("time window narrowed to the tenant's late records", () => {
  it("returns exactly the records in the window when it ends inside, on or around the first and last hour of late ones", async () => {
    const tenant = await newTenant(server());
    // Late records in two hours over a year apart, on either side of the middle of each, early
    // and late: a window that wide (on SQLite) or open-ended is tiled only where the tenant has
    // late records, and its buckets may reach past a side of the window beyond which it has none.
    const firstHour = Date.UTC(2025, 3, 17, 19);
    const lastHour = firstHour + 400 * DAY;
    const stored: Stored[] = [];
    for (const [h, hour] of [firstHour, lastHour].entries()) {
      for (const [m, minute] of [1, 29, 30, 31, 59].entries()) {
        const event = hour + minute * 60_000;
        stored.push({ id: `l-${h}-${m}-a`, event, createdAt: event + 3 * DAY });
        stored.push({ id: `l-${h}-${m}-b`, event, createdAt: event - 2 * DAY });
      }
    }
    for (let day = -2; day <= 402; day += 20)
      stored.push({ id: `t-${day}`, event: firstHour + day * DAY, createdAt: firstHour + day * DAY + 1 });
    await storeAsPlanned(tenant, stored);
    const middle = (hour: number) => hour + 30 * 60_000;
    // The first and last late event dates, which the range is narrowed to, and a millisecond either side.
    const [low, high] = [firstHour + 60_000, lastHour + 59 * 60_000];
    const windows: [number | undefined, number | undefined][] = [];
    for (const since of [
      firstHour - 1,
      firstHour,
      firstHour + 1,
      low - 1,
      low,
      low + 1,
      middle(firstHour),
      firstHour + HOUR - 1,
      firstHour + HOUR,
    ]) {
      for (const until of [
        lastHour - 1,
        lastHour,
        middle(lastHour),
        high - 1,
        high,
        high + 1,
        lastHour + HOUR - 1,
        lastHour + HOUR,
        undefined,
      ])
        windows.push([since, until]);
    }
    for (const until of [lastHour, middle(lastHour), lastHour + HOUR]) windows.push([undefined, until]);
    for (const [since, until] of windows) {
      // Wide enough that SQLite narrows it (Engine.armsPerQuery); PostgreSQL, whose threshold is
      // higher, narrows the open-ended ones.
      if (since !== undefined && until !== undefined) expect(tiles(since, until).length).toBeGreaterThan(SQLITE.armsPerQuery);
      const want = stored
        .filter((r) => (since === undefined || r.event >= since) && (until === undefined || r.event <= until))
        .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
        .map((r) => r.id);
      const query = [since === undefined ? "" : `createdSince=${iso(since)}`, until === undefined ? "" : `createdUntil=${iso(until)}`]
        .filter((part) => part !== "")
        .join("&");
      const { items } = await readAll(server(), tenant.keys.read, `/v1/withdrawals?${query}`, [3, 100]);
      expect(
        items.map((r) => r.id),
        query,
      ).toEqual(want);
    }
  });
});

describe("a wide window's later pages by its bracket", () => {
  it("reads its late records as one arm by createdAt between the records of other dates, by its tiling elsewhere, and returns exactly the window", async () => {
    const tenant = await newTenant(server());
    const since = Date.UTC(2025, 6, 3, 5, 17);
    const until = since + 200 * DAY;
    const stored: Stored[] = [];
    for (let day = 0; day <= 200; day += 1) {
      const event = since + day * DAY + (day % 7) * HOUR;
      stored.push({ id: `t-${day}`, event, createdAt: event + 60_000 });
      if (day % 3 === 0) stored.push({ id: `l-${day}`, event, createdAt: event + 3 * DAY });
    }
    // Late records of other dates: before the window, stored in the middle of its months (the
    // bracket's `above`); after it, stored a few days after its end (its `below`); and records
    // of the window stored after those, which only its tiling reads. Each at the window's edges too.
    const above = since + 100 * DAY + 5;
    const below = until + 5 * DAY;
    for (const [i, event] of [since - 1, since - 20 * DAY, since - 9 * HOUR].entries())
      stored.push({ id: `b-${i}`, event, createdAt: above - i });
    for (const [i, event] of [until + 1, until + 2 * DAY].entries()) stored.push({ id: `a-${i}`, event, createdAt: below + i });
    for (const [i, event] of [since, since + 50 * DAY, until].entries())
      stored.push({ id: `v-${i}`, event, createdAt: until + 10 * DAY + i });
    await storeAsPlanned(tenant, stored);
    const query = `createdSince=${iso(since)}&createdUntil=${iso(until)}`;
    expect(tiles(since, until).length).toBeGreaterThanOrEqual(BRACKET_ARMS);
    const want = stored
      .filter((r) => r.event >= since && r.event <= until)
      .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
      .map((r) => r.id);
    // The late range found before the walk, as a walk that follows another finds it.
    await probedPlan(server().storage.db, withdrawals, hashKey(tenant.keys.read));
    const statements = vi.spyOn(server().storage.db, "executeQuery");
    try {
      for (const limits of [[1, 4], [3], [100]]) {
        statements.mockClear();
        const items: string[] = [];
        const brackets = new Set<string>();
        let cursor: string | null = null;
        do {
          const limit = limits[items.length % limits.length]!;
          const url = `/v1/withdrawals?${query}&limit=${limit}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`;
          const reply: Reply<{ data: { id: string }[]; cursor: string | null }> = await get(server(), url, tenant.keys.read);
          expect(reply.status, url).toBe(200);
          items.push(...reply.body.data.map((r) => r.id));
          cursor = reply.body.cursor;
          if (cursor !== null) brackets.add(planOfCursor(cursor)?.split(";in:")[1] ?? "none");
        } while (cursor !== null);
        expect(items, `limits ${limits.join(",")}`).toEqual(want);
        // The first page's cursor carries none; every later one the bracket its walk found.
        expect([...brackets].sort(), `limits ${limits.join(",")}`).toEqual([`${above},${below}`, "none"].sort());
        const texts = statements.mock.calls.map(([compiled]) => ("sql" in compiled ? compiled.sql : ""));
        expect(texts.filter((text) => / as "p0"/.test(text)).length, "one statement finds the bracket").toBe(1);
        const byCreated = texts.filter((text) => /"late_event_at" is not null and "created_at" > /.test(text));
        expect(byCreated.length, "pages by the bracket").toBeGreaterThan(0);
      }
    } finally {
      statements.mockRestore();
    }
  });
});

describe("a wide window's first page by its tops", () => {
  it("reads only the arms that can hold its rows once its tops are found, and exactly the window whatever is stored since", async () => {
    const tenant = await newTenant(server());
    const since = Date.UTC(2025, 2, 3, 5, 17);
    const until = since + 200 * DAY;
    expect(tiles(since, until).length).toBeGreaterThanOrEqual(TOPS_ARMS);
    const stored: Stored[] = [];
    for (let day = 0; day <= 200; day += 2) {
      const event = since + day * DAY + (day % 5) * HOUR;
      stored.push({ id: `t-${day}`, event, createdAt: event + 60_000 });
    }
    // Imported a month after the window's end in the order of their events, 50 to a batch (so
    // that batches share a createdAt across buckets): a record every 12 hours through the window
    // and every 20 minutes in its last 8 days, enough for whole buckets of TOPS_RANK records, and
    // records dated before and after it.
    const importedAt = until + 30 * DAY;
    const events = [
      ...Array.from({ length: 40 }, (_, i) => since - 20 * DAY + i * HOUR),
      ...Array.from({ length: 384 }, (_, i) => since + i * 12 * HOUR),
      ...Array.from({ length: 576 }, (_, i) => until - 8 * DAY + i * 20 * MINUTE),
      ...Array.from({ length: 30 }, (_, i) => until + 1 + i * HOUR),
    ].sort((a, b) => a - b);
    events.forEach((event, i) => stored.push({ id: `l-${i}`, event, createdAt: importedAt + Math.floor(i / 50) }));
    await storeAsPlanned(tenant, stored);
    const query = `createdSince=${iso(since)}&createdUntil=${iso(until)}`;
    const windowOf = (all: Stored[]) =>
      all
        .filter((r) => r.event >= since && r.event <= until)
        .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
        .map((r) => r.id);
    const want = windowOf(stored);
    const statements = vi.spyOn(server().storage.db, "executeQuery");
    const pageStatements = () =>
      statements.mock.calls.map(([compiled]) => ("sql" in compiled ? compiled.sql : "")).filter((text) => / union all /.test(text));
    const firstPage = async (limit: number) => {
      statements.mockClear();
      const reply: Reply<{ data: { id: string }[] }> = await get(server(), `/v1/withdrawals?${query}&limit=${limit}`, tenant.keys.read);
      expect(reply.status).toBe(200);
      return reply.body.data.map((r) => r.id);
    };
    const arms = (text: string) => text.split(" union all ").length;
    try {
      // The first pages are read by the whole tiling, until the tops found in the background are kept.
      expect(await firstPage(100)).toEqual(want.slice(0, 100));
      const whole = pageStatements().at(-1)!;
      await vi.waitFor(async () => {
        expect(await firstPage(100)).toEqual(want.slice(0, 100));
        expect(pageStatements().some((text) => text.includes("since_tops"))).toBe(true);
      });
      for (const limit of [1, 7, 100]) {
        expect(await firstPage(limit), `limit ${limit}`).toEqual(want.slice(0, limit));
        const [page, ...more] = pageStatements();
        expect(more, "one statement").toEqual([]);
        expect(page, "by the tops").toContain("since_tops");
        expect(arms(page!), "fewer arms").toBeLessThan(arms(whole) - 4);
      }
      const walked = await readAll(server(), tenant.keys.read, `/v1/withdrawals?${query}`);
      expect(walked.items.map((r: { id: string }) => r.id)).toEqual(want);

      // Late records of other dates stored since the tops leave them good.
      const later = (id: string, event: number, at: number): Stored => ({ id, event, createdAt: at });
      const outside = Array.from({ length: 5 }, (_, i) => later(`o-${i}`, since - DAY - i * HOUR, importedAt + DAY));
      await storeAsPlanned(tenant, outside);
      expect(await firstPage(100)).toEqual(want.slice(0, 100));
      expect(pageStatements().map((text) => text.includes("since_tops"))).toEqual([true]);

      // One of the window stored since them: the page is read again by the whole tiling.
      const inside = [later("n-0", since + 3 * DAY, importedAt + 2 * DAY)];
      await storeAsPlanned(tenant, inside);
      const now = windowOf([...stored, ...outside, ...inside]);
      expect(now[0]).toBe("n-0");
      expect(await firstPage(100)).toEqual(now.slice(0, 100));
      expect(pageStatements().map((text) => text.includes("since_tops"))).toEqual([true, false]);

      // Found again, and then TOPS_RANK late records of other dates stored since: read again too.
      await vi.waitFor(async () => {
        expect(await firstPage(100)).toEqual(now.slice(0, 100));
        expect(pageStatements().map((text) => text.includes("since_tops"))).toEqual([true]);
      });
      // A window of the tenant's that holds no record: its tops keep no arm, so its tiling reads it.
      const [emptySince, emptyUntil] = [since - 18 * DAY, since - 2 * DAY];
      expect(tiles(emptySince, emptyUntil).length).toBeGreaterThanOrEqual(TOPS_ARMS);
      const empty = `/v1/withdrawals?createdSince=${iso(emptySince)}&createdUntil=${iso(emptyUntil)}`;
      statements.mockClear();
      await vi.waitFor(async () => {
        const reply: Reply<{ data: unknown[] }> = await get(server(), empty, tenant.keys.read);
        expect([reply.status, reply.body.data]).toEqual([200, []]);
        expect(statements.mock.calls.some(([compiled]) => "sql" in compiled && compiled.sql.includes(" as as_of"))).toBe(true);
      });
      const again: Reply<{ data: unknown[] }> = await get(server(), empty, tenant.keys.read);
      expect([again.status, again.body.data]).toEqual([200, []]);

      const many = Array.from({ length: TOPS_RANK }, (_, i) => later(`m-${i}`, until + DAY + i * MINUTE, importedAt + 3 * DAY));
      await storeAsPlanned(tenant, many);
      expect(await firstPage(100)).toEqual(now.slice(0, 100));
      expect(pageStatements().map((text) => text.includes("since_tops"))).toEqual([true, false]);
    } finally {
      statements.mockRestore();
    }
  });
});

describe("the arms a first page's tops leave out", () => {
  const top = (newest: number | null, ranked: number | null = null) => ({ newest, ranked });
  const values = { since: 0, sinceLower: -SLACK_MS, until: 1000, untilUpper: 1000 + SLACK_MS, b3_0: 7, b2_1: 8, b1_2: 9, e1_3: 10 };

  it("leaves out every arm whose newest lies below the highest TOPS_RANK-th newest of any, and those that held no row", () => {
    const tops = {
      asOf: 5000 + SLACK_MS,
      onTime: top(2000, 1500),
      tiles: { b3_0: top(1400), b2_1: top(3000, 2500), b1_2: top(2400), e1_3: top(null) },
    };
    expect(byTops(tops, () => values)).toEqual({
      values: {
        since: 0,
        sinceLower: -SLACK_MS,
        until: 1000,
        untilUpper: 1000 + SLACK_MS,
        b2_1: 8,
        topsAsOf: 5000 + SLACK_MS,
        onTimeLeftOut: 1,
      },
      leftOut: 2400,
    });
  });

  it("keeps arm A while its range ends after the tops' moment, and leaves no arm out by tops of another tiling", () => {
    const tops = { asOf: 1000, onTime: top(900), tiles: { b3_0: top(1400), b2_1: top(3000, 2500), b1_2: top(2400), e1_3: top(null) } };
    expect(byTops(tops, () => values)?.values).toEqual({
      since: 0,
      sinceLower: -SLACK_MS,
      until: 1000,
      untilUpper: 1000 + SLACK_MS,
      b2_1: 8,
      topsAsOf: 1000,
    });
    expect(byTops({ ...tops, tiles: { b3_0: top(1400), b2_1: top(3000, 2500), b1_2: top(2400) } }, () => values)).toBeUndefined();
  });

  it("leaves none out when too few can be, or every arm would be", () => {
    const tops = {
      asOf: 5000 + SLACK_MS,
      onTime: top(2600),
      tiles: { b3_0: top(2600), b2_1: top(3000, 2500), b1_2: top(2600), e1_3: top(null) },
    };
    expect(byTops(tops, () => values)).toBeUndefined();
    const empty = {
      asOf: 5000 + SLACK_MS,
      onTime: top(null),
      tiles: { b3_0: top(null), b2_1: top(null), b1_2: top(null), e1_3: top(null) },
    };
    expect(byTops(empty, () => values)).toBeUndefined();
  });
});

describe("a bounded window within the late records' range seen before", () => {
  it("is tiled over its own span without a probe, and misses no late record stored since", async () => {
    const tenant = await newTenant(server());
    // Past, so that no window here reaches the present.
    const firstHour = Date.UTC(2022, 3, 17, 19);
    const lastHour = firstHour + 800 * DAY;
    const stored: Stored[] = [
      { id: "l-first", event: firstHour + 60_000, createdAt: firstHour + 3 * DAY },
      { id: "l-last", event: lastHour + 60_000, createdAt: lastHour + 3 * DAY },
    ];
    for (let day = 0; day <= 800; day += 40)
      stored.push({ id: `t-${day}`, event: firstHour + day * DAY, createdAt: firstHour + day * DAY + 1 });
    await storeAsPlanned(tenant, stored);
    const planOf = (query: string) => firstPagePlan(tenant, query);
    const window = (since: number, until: number) => `createdSince=${iso(since)}&createdUntil=${iso(until)}`;
    const [since, until] = [firstHour + 2 * HOUR + 1, lastHour - 2 * HOUR - 1];
    // Wide enough that either engine narrows it when it must (Engine.armsPerQuery).
    expect(needsLateRange(server().storage.db, withdrawals, parseListQuery(withdrawals, window(since, until)))).toBe(true);
    // The first walk probes: its cursor carries the range.
    expect(await planOf(window(since, until))).toBe(`late:${firstHour + 60_000},${lastHour + 60_000}`);
    // A late record stored since, inside the window; a walk now skips the probe (its cursor
    // carries no range) and finds it.
    const since2 = { id: "l-since", event: firstHour + 400 * DAY, createdAt: lastHour + 10 * DAY };
    await storeAsPlanned(tenant, [since2]);
    expect(await planOf(window(since, until))).toBeUndefined();
    const want = [...stored, since2]
      .filter((r) => r.event >= since && r.event <= until)
      .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
      .map((r) => r.id);
    expect((await readAll(server(), tenant.keys.read, `/v1/withdrawals?${window(since, until)}`, [3])).items.map((r) => r.id)).toEqual(
      want,
    );
    // A window that reaches past the range seen tiles by that range, which its first page checks
    // in its own statement: its cursor carries it.
    const wide = window(firstHour - 5 * DAY, lastHour + 5 * DAY);
    expect(await planOf(wide)).toBe(`late:${firstHour + 60_000},${lastHour + 60_000}`);
    // Late records stored since outside that range, in the window after and before it, and before
    // the window (where a bucket that reaches past the range may lie): the check finds each, and
    // the page is read again by the range a probe finds.
    for (const outside of [
      { id: "l-after", event: lastHour + 2 * DAY, createdAt: lastHour + 11 * DAY },
      { id: "l-before", event: firstHour - 2 * DAY, createdAt: lastHour + 12 * DAY },
      { id: "l-before-window", event: firstHour - 30 * DAY, createdAt: lastHour + 13 * DAY },
    ]) {
      stored.push(outside);
      await storeAsPlanned(tenant, [outside]);
      const wanted = [...stored, since2]
        .filter((r) => r.event >= firstHour - 5 * DAY && r.event <= lastHour + 5 * DAY)
        .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
        .map((r) => r.id);
      expect(
        (await readAll(server(), tenant.keys.read, `/v1/withdrawals?${wide}`, [3])).items.map((r) => r.id),
        outside.id,
      ).toEqual(wanted);
    }
  });
});

describe("a window's first page after its tenant was found to have no late records", () => {
  it("assumes none, checked by its own statement, and finds one stored since", async () => {
    const tenant = await newTenant(server());
    const base = Date.UTC(2022, 3, 17, 19);
    const stored: Stored[] = [];
    for (let day = 0; day <= 400; day += 10) stored.push({ id: `t-${day}`, event: base + day * DAY, createdAt: base + day * DAY + 1 });
    await storeAsPlanned(tenant, stored);
    const window = `createdSince=${iso(base)}&createdUntil=${iso(base + 400 * DAY)}`;
    expect(needsLateRange(server().storage.db, withdrawals, parseListQuery(withdrawals, window))).toBe(true);
    // The first walk finds no late record; the next assumes none.
    expect(await firstPagePlan(tenant, window)).toBe("late:none");
    expect(await firstPagePlan(tenant, window)).toBe("late:none");
    const late = { id: "l-since", event: base + 200 * DAY, createdAt: base + 500 * DAY };
    await storeAsPlanned(tenant, [late]);
    const want = [late, ...stored].sort((a, b) => b.createdAt - a.createdAt).map((r) => r.id);
    expect((await readAll(server(), tenant.keys.read, `/v1/withdrawals?${window}`, [3])).items.map((r) => r.id)).toEqual(want);
  });
});

describe("a window that needs no narrowing, once its tenant's late records were found in the background", () => {
  it("reads none of the buckets where the tenant has none, checked by its own statement, and finds one stored since", async () => {
    const tenant = await newTenant(server());
    const base = Date.UTC(2022, 3, 17, 19);
    const stored: Stored[] = [];
    for (let hour = 0; hour <= 48; hour += 4)
      stored.push({ id: `t-${hour}`, event: base + hour * HOUR, createdAt: base + hour * HOUR + 1 });
    await storeAsPlanned(tenant, stored);
    // Past, and short enough that neither engine must narrow it: a few buckets of eight hours.
    const window = `createdSince=${iso(base + 5 * HOUR)}&createdUntil=${iso(base + 29 * HOUR)}`;
    expect(needsLateRange(server().storage.db, withdrawals, parseListQuery(withdrawals, window))).toBe(false);
    // The first walk reads its own span's buckets; a walk after the key's late records were found (none) assumes none.
    expect(await firstPagePlan(tenant, window)).toBeUndefined();
    await vi.waitFor(async () => expect(await firstPagePlan(tenant, window)).toBe("late:none"), { timeout: 5_000, interval: 20 });
    const late = { id: "l-since", event: base + 12 * HOUR, createdAt: base + 100 * DAY };
    await storeAsPlanned(tenant, [late]);
    const want = [late, ...stored]
      .filter((r) => r.event >= base + 5 * HOUR && r.event <= base + 29 * HOUR)
      .sort((a, b) => b.createdAt - a.createdAt)
      .map((r) => r.id);
    expect(want).toContain("l-since");
    expect((await readAll(server(), tenant.keys.read, `/v1/withdrawals?${window}`, [2])).items.map((r) => r.id)).toEqual(want);
  });
});

describe("a narrowed window's first page beside a writer", () => {
  /** Late records in two hours 400 days apart, at these minutes, and one on time every ten days between. */
  async function storeTwoLateHours(minutes: number[]) {
    const tenant = await newTenant(server());
    const firstHour = Date.UTC(2025, 3, 17, 19);
    const lastHour = firstHour + 400 * DAY;
    const stored: Stored[] = [];
    for (const [h, hour] of [firstHour, lastHour].entries()) {
      for (const minute of minutes)
        stored.push({ id: `l-${h}-${minute}`, event: hour + minute * 60_000, createdAt: hour + 3 * DAY + minute });
    }
    for (let day = 0; day <= 400; day += 10)
      stored.push({ id: `t-${day}`, event: firstHour + day * DAY, createdAt: firstHour + day * DAY + 1 });
    await storeAsPlanned(tenant, stored);
    return { tenant, firstHour, lastHour, stored };
  }

  it("shows no record stored after it found the late records' range, so its cursor passes none", async () => {
    const { tenant, firstHour, lastHour, stored } = await storeTwoLateHours([1]);
    // Open-ended, so narrowed on every engine.
    const since = firstHour - DAY;
    const query = parseListQuery(withdrawals, `limit=5&createdSince=${iso(since)}`);
    const keyHash = hashKey(tenant.keys.read);
    const { db } = server().storage;
    const plan = await probedPlan(db, withdrawals, keyHash);
    expect(plan.late, "the window is narrowed to the late records").toEqual({ low: firstHour + 60_000, high: lastHour + 60_000 });
    // Between the probe and the page: a late record whose event lies in the window but past the
    // late records' range and any bucket that reaches past it, then one on time, stored after it.
    const later = lastHour + 6 * DAY;
    await storeAsPlanned(tenant, [
      { id: "late-since", event: lastHour + 8 * 365 * DAY, createdAt: later },
      { id: "on-time-since", event: later + 60_000, createdAt: later + 120_000 },
    ]);
    const { rows } = await db.executeQuery(pageQuery(db, withdrawals, keyHash, query, undefined, query.limit + 1, plan));
    const before = stored
      .filter((r) => r.event >= since)
      .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
      .map((r) => r.id);
    expect(rows.map((r) => r.id)).toEqual(before.slice(0, query.limit + 1));
    // A walk begun now finds both.
    const { items } = await readAll(server(), tenant.keys.read, `/v1/withdrawals?createdSince=${iso(since)}`, [5]);
    expect(items.map((r) => r.id)).toEqual(["on-time-since", "late-since", ...before]);
  });

  it.each([
    ["open at its end, by the range it assumed and checked", "since"],
    ["that ends now, by the range it assumed and checked", "now"],
    ["open at its start, by the range it found", "until"],
  ] as const)("reads its later pages, a window %s, which every record below its cursor lies in", async (_label, open) => {
    const { tenant, firstHour, lastHour, stored } = await storeTwoLateHours([1, 59]);
    const now = Date.now();
    const [since, until] =
      open === "since" ? [firstHour - DAY, undefined] : open === "now" ? [firstHour - DAY, now] : [undefined, lastHour + DAY];
    const inWindow = (event: number) => (since === undefined || event >= since) && (until === undefined || event <= until);
    const bounds = [since === undefined ? "" : `createdSince=${iso(since)}`, until === undefined ? "" : `createdUntil=${iso(until)}`];
    const path = `/v1/withdrawals?${bounds.filter((b) => b !== "").join("&")}`;
    // A window that reaches the present reads its first page as the plain list's (WindowPlan.recent)
    // unless the records stored last lie outside it: these do, so it is read by its tiling.
    if (open !== "until")
      await storeAsPlanned(
        tenant,
        Array.from({ length: 10 }, (_, i) => ({ id: `x-${i}`, event: firstHour - 30 * DAY + i, createdAt: lastHour + 10 * DAY + i })),
      );
    const first = await get<{ data: { id: string }[]; cursor: string }>(server(), `${path}&limit=4`, tenant.keys.read);
    // Late records as far as the window's end or the end of the 8-hour bucket a day from now,
    // checked by the page's own statement; or the first and last late event dates, found by a query.
    const carried = {
      since: /^late:-8640000000000000,\d+$/,
      now: new RegExp(`^late:-8640000000000000,${now}$`),
      until: new RegExp(`^late:${firstHour + 60_000},${lastHour + 59 * 60_000}$`),
    };
    expect(planOfCursor(first.body.cursor)).toMatch(carried[open]);
    // Late records stored now lie outside the range found, past the range assumed (years from
    // now; for the window that ends now, just past its end, in the same 8-hour bucket), and all
    // above the cursor.
    await storeAsPlanned(tenant, [
      { id: "late-before", event: firstHour - 5 * DAY + 1, createdAt: lastHour + 20 * DAY },
      open === "now"
        ? { id: "late-just-after", event: now + 1, createdAt: lastHour + 20 * DAY + 1 }
        : { id: "late-after", event: lastHour + 8 * 365 * DAY, createdAt: lastHour + 20 * DAY + 1 },
    ]);
    const ids = first.body.data.map((r) => r.id);
    let cursor: string | null = first.body.cursor;
    while (cursor !== null) {
      const page: Reply<{ data: { id: string }[]; cursor: string | null }> = await get(
        server(),
        `${path}&limit=3&cursor=${encodeURIComponent(cursor)}`,
        tenant.keys.read,
      );
      expect(page.status).toBe(200);
      ids.push(...page.body.data.map((r) => r.id));
      cursor = page.body.cursor;
    }
    const want = stored
      .filter((r) => inWindow(r.event))
      .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
      .map((r) => r.id);
    expect(ids).toEqual(want);
    // A walk begun now finds the records stored since in the window: past the range the first
    // page assumes, which it finds (and reads again by the range a query finds). The window that
    // ends now holds neither.
    const { items } = await readAll(server(), tenant.keys.read, path, [4]);
    const storedSince = { since: ["late-after"], now: [], until: ["late-before"] }[open];
    expect(items.map((r) => r.id)).toEqual([...storedSince, ...want]);
  });
});

describe("a window that reaches the present", () => {
  it("reads its pages as the plain list's while the records stored last lie in it, and by its tiling from the first page that holds less", async () => {
    const tenant = await newTenant(server());
    const now = Date.now();
    const since = now - 3 * DAY;
    // In createdAt order, newest first: late records of the window's first day, on-time records of
    // the last hours, an import of records 400 days old (outside), on-time records of the
    // window's first day.
    const stored: Stored[] = [
      ...Array.from({ length: 12 }, (_, i) => ({
        id: `a-${i}`,
        event: now - 2.5 * DAY + i * 60_000,
        createdAt: now - 2.5 * DAY + i * 60_000,
      })),
      ...Array.from({ length: 40 }, (_, i) => ({ id: `b-${i}`, event: now - 400 * DAY + i * HOUR, createdAt: now - DAY })),
      ...Array.from({ length: 12 }, (_, i) => ({
        id: `c-${i}`,
        event: now - 10 * HOUR + i * 600_000,
        createdAt: now - 10 * HOUR + i * 600_000,
      })),
      ...Array.from({ length: 5 }, (_, i) => ({ id: `d-${i}`, event: now - 2.9 * DAY + i, createdAt: now - 30 * 60_000 + i })),
    ];
    await storeAsPlanned(tenant, stored);
    for (const until of [undefined, now + HOUR]) {
      const path = `/v1/withdrawals?createdSince=${iso(since)}${until === undefined ? "" : `&createdUntil=${iso(until)}`}`;
      const want = stored
        .filter((r) => r.event >= since && (until === undefined || r.event <= until))
        .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
        .map((r) => r.id);
      for (const limits of [[7], [2, 7, 50], [50]]) {
        const { items } = await readAll(server(), tenant.keys.read, path, limits);
        expect(
          items.map((r) => r.id),
          `${path} at ${limits.join(", ")}`,
        ).toEqual(want);
      }
      // At 7 a page (RECENT_SCAN pages' worth of rows read, 16): the first two find a page of the
      // window among the rows stored last; the third finds one row of it before the import, and
      // is read by its tiling, as are the pages after it.
      const plans: (string | undefined)[] = [];
      let cursor: string | null = null;
      do {
        const reply: Reply<{ cursor: string | null }> = await get(
          server(),
          `${path}&limit=7${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`,
          tenant.keys.read,
        );
        cursor = reply.body.cursor;
        if (cursor !== null) plans.push(planOfCursor(cursor));
      } while (cursor !== null);
      expect(plans.slice(0, 2), path).toEqual(["recent", "recent"]);
      expect(
        plans.slice(2).filter((plan) => plan === "recent"),
        path,
      ).toEqual([]);
      expect(plans.length, path).toBeGreaterThan(2);
    }
    // A window narrower than RECENT_WIDTH_MS (a poll of the last hours) is read by its tiling,
    // though its rows are the ones stored last.
    const polled = await newTenant(server());
    const recentRows: Stored[] = Array.from({ length: 6 }, (_, i) => ({
      id: `p-${i}`,
      event: now - 5 * HOUR + i * HOUR,
      createdAt: now - 5 * HOUR + i * HOUR,
    }));
    await storeAsPlanned(polled, recentRows);
    for (const [back, plan] of [
      [RECENT_WIDTH_MS - HOUR, "not recent"],
      [RECENT_WIDTH_MS + HOUR, "recent"],
    ] as const) {
      const poll = `/v1/withdrawals?createdSince=${iso(now - back)}`;
      const { body } = await get<{ data: { id: string }[]; cursor: string }>(server(), `${poll}&limit=2`, polled.keys.read);
      expect(
        body.data.map((r) => r.id),
        poll,
      ).toEqual(["p-5", "p-4"]);
      expect(planOfCursor(body.cursor) === "recent" ? "recent" : "not recent", poll).toBe(plan);
    }
    // The statement itself, at 7 a page (8 rows asked, 16 read at most): a page short of 8 rows of
    // the window is the window's own when the list holds no more rows after the cursor than the
    // bound, and says so otherwise (a row with `recent_more`), for the page to be read again.
    const { db } = server().storage;
    const keyHash = hashKey(tenant.keys.read);
    const query = parseListQuery(withdrawals, `limit=7&createdSince=${iso(since)}`);
    const read = async (after: { key: number; id: string }) =>
      (await db.executeQuery(pageQuery(db, withdrawals, keyHash, query, after, 8, { recent: true }))).rows;
    const at = (id: string) => ({ key: stored.find((r) => r.id === id)!.createdAt, id });
    const more = (row: { recent_more?: unknown }) => row.recent_more !== null && row.recent_more !== undefined;
    // After a-5: the list's last five rows, all in the window.
    const last = await read(at("a-5"));
    expect(last.map((r) => r.id)).toEqual(["a-4", "a-3", "a-2", "a-1", "a-0"]);
    expect(last.filter(more)).toEqual([]);
    // After c-0: the import's 40 rows come first, none in the window.
    const stopped = await read(at("c-0"));
    expect(stopped.map((r) => (more(r) ? "more" : r.id))).toEqual(["more"]);
  });
});

describe("time window narrower than a millisecond", () => {
  it("holds nothing: a lower bound rounded up past an equal upper one is 200 and an empty page", async () => {
    const { tenant, first } = await storeLateAcrossBuckets();
    // Stored times are whole milliseconds, so the window (midnight - 0.5 ms, midnight - 0.5 ms] holds none.
    for (const midnight of [first, first + DAY, 5 * DAY]) {
      const at = `${iso(midnight - 1).slice(0, -1)}5Z`;
      const { items } = await readAll(server(), tenant.keys.read, `/v1/withdrawals?createdSince=${at}&createdUntil=${at}`, [10]);
      expect(items, at).toEqual([]);
    }
  });
});

describe("time windows at the ends of the dates a record can carry", () => {
  it("returns exactly the records of windows from the first instant of year 1 to the last of 9999, in either order", async () => {
    const tenant = await newTenant(server());
    const now = Date.UTC(2026, 6, 20, 12);
    const [first, last] = [Date.parse("0001-01-01T00:00:00.000Z"), Date.parse("9999-12-31T23:59:59.999Z")];
    // Every record late but the one stored at its event: their buckets and weeks are the first
    // and last any date has, and the windows' probes and spans reach past both ends.
    const events = [first, first + 1, first + NAME_WEEK_MS, now - DAY, now, last - NAME_WEEK_MS, last - 1, last];
    const stored = events.map((event, i) => ({ id: `we-${i}`, name: ["Maria", "Ana", "mário"][i % 3]!, event }));
    server().clock.now = now;
    await storeNamed(tenant, stored);
    server().clock.now = undefined;
    const windows: [number | undefined, number | undefined][] = [
      [first, last],
      [first, undefined],
      [undefined, last],
      [first, first],
      [last, last],
      [first, now],
      [now, last],
      [first + 1, last - 1],
    ];
    for (const [since, until] of windows) {
      const bounds = `${since === undefined ? "" : `&createdSince=${iso(since)}`}${until === undefined ? "" : `&createdUntil=${iso(until)}`}`;
      const inWindow = stored.filter((r) => (since === undefined || r.event >= since) && (until === undefined || r.event <= until));
      for (const name of [undefined, "ma"]) {
        const want = inWindow
          .filter((r) => name === undefined || sortKey(r.name).startsWith(name))
          .map((r) => ({ id: r.id, key: sortKey(r.name) }))
          .sort(byName)
          .map((r) => r.id);
        const query = `${name === undefined ? "" : `name=${name}`}${bounds}`;
        const { items } = await readAll(server(), tenant.keys.read, `/v1/withdrawals?${query}`, [2, 100]);
        const ids = items.map((r) => r.id);
        // In createdAt order every record shares `now`, so ties go by id, newest first.
        expect(name === undefined ? [...ids].sort() : ids, query).toEqual(name === undefined ? [...want].sort() : want);
      }
    }
  });
});

/** Syncs withdrawals of the given ids, employee names and event dates, in batches of 1,000. */
async function storeNamed(tenant: TestTenant, rows: { id: string; name: string; event: number }[]): Promise<void> {
  for (let i = 0; i < rows.length; i += 1000)
    await sync(
      server(),
      tenant,
      "withdrawals",
      rows.slice(i, i + 1000).map((r) => withdrawal({ id: r.id, employeeName: r.name, deliveredAt: iso(r.event) })),
    );
}

describe("time window in name order", () => {
  it("returns the same records by either plan: the window's own rows sorted, or the name index when the window is large", async () => {
    const tenant = await newTenant(server());
    const now = Date.UTC(2026, 6, 20, 12, 0, 0, 0);
    const names = ["Maria Lopes", "mário Dias", "MARTA Silva", "Ana Maria", "Zé Marques", "Márcia", "marco"];
    // More rows than WINDOW_FIRST_BOUND over ten `days`, most of them late, read through windows
    // from half an `hour` (which fits in a page of 60) to all of them, by either plan (below: which
    // one each first page picks). A `day` is TIME_SCALE days, so that every window the plans
    // are picked for spans more than NAME_WEEK_ARMS weeks: a narrower one is read by week.
    const [day, hour] = [TIME_SCALE * DAY, TIME_SCALE * HOUR];
    const stored = Array.from({ length: WINDOW_FIRST_BOUND + 300 }, (_, i) => ({
      id: `wn-${String(i).padStart(5, "0")}`,
      name: names[(i * 5) % names.length]!,
      event: now - Math.floor(((i * 7919) % 10_000) * 86_400 * TIME_SCALE), // spread over ten `days`, in no order
    }));
    server().clock.now = now;
    await storeNamed(tenant, stored);
    server().clock.now = undefined;
    const windows: [number | undefined, number | undefined][] = [
      [now - 11 * day, now + day],
      [now - 3 * day - 1234, now - 2 * day],
      [now - 5 * day, now - 2 * day],
      [now - 3 * day, now - 3 * day + 2 * hour],
      [now - 3 * day, now - 3 * day + hour / 2],
      [now - 5 * day, undefined],
      [undefined, now - 9 * day],
    ];
    for (const [since, until] of windows) {
      for (const prefix of ["ma", "MÁR", "z"]) {
        const want = stored
          .filter((r) => (since === undefined || r.event >= since) && (until === undefined || r.event <= until))
          .filter((r) => sortKey(r.name).startsWith(sortKey(prefix)))
          .map((r) => ({ id: r.id, key: sortKey(r.name) }))
          .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.id < b.id ? -1 : 1))
          .map((r) => r.id);
        const bounds = [since === undefined ? "" : `&createdSince=${iso(since)}`, until === undefined ? "" : `&createdUntil=${iso(until)}`];
        const query = `name=${encodeURIComponent(prefix)}${bounds.join("")}`;
        const { items } = await readAll(server(), tenant.keys.read, `/v1/withdrawals?${query}`, [100, 7, 60]);
        expect(
          items.map((r) => r.id),
          query,
        ).toEqual(want);
      }
    }
    // The first page's choice rides in its cursor, so that the walk's later pages need not count.
    const planOf = (query: string) => firstPagePlan(tenant, query);
    // The plan each step of the first page picks (choosingPage), worked out from the stored rows
    // for a walk at limit=2: a window that fits in the page is read whole (and has no cursor);
    // else, unless the tenant has a row more than SPAN_SHARE times the window's width before
    // or after it (an on-time row by its createdAt, `now` for all of them; a late row by its
    // 8-hour bucket; after it only if that is not a day past the present), the name index when
    // its first NAME_PROBE_PAGES pages' worth of entries show the window at least 1 / NAME_INDEX_PAGES
    // of them, its later pages by the window's keys if the tenant has a row more than KEYS_SHARE
    // times its width from it (as above); else the count up to WINDOW_FIRST_BOUND, the window's
    // own rows within it and the window's keys beyond.
    const take = 3;
    const engine = ENGINE === "sqlite" ? SQLITE : POSTGRES;
    const named = stored
      .filter((r) => sortKey(r.name).startsWith(sortKey("ma")))
      .sort((a, b) => (sortKey(a.name) < sortKey(b.name) ? -1 : sortKey(a.name) > sortKey(b.name) ? 1 : a.id < b.id ? -1 : 1));
    const bucket = (ms: number) => Math.floor((ms + BUCKET_ORIGIN_MS) / BUCKET_LEVELS_MS[EDGE_LEVEL]!);
    const expected = (since: number, until: number) => {
      const inWindow = (r: { event: number }) => r.event >= since && r.event <= until;
      const rows = stored.filter(inWindow).length;
      const hits = named.slice(0, take * NAME_PROBE_PAGES).filter(inWindow).length;
      const spans = (share: number) => {
        const wide = (until - since) * share;
        const after = until + wide <= Date.now() + DAY;
        return stored.some((r) =>
          lateEventAt(r.event, now) === null
            ? now < since - wide || (after && now > until + wide)
            : bucket(r.event) < bucket(since - wide) || (after && bucket(r.event) > bucket(until + wide)),
        );
      };
      const spanned = spans(SPAN_SHARE);
      if (!spanned && hits >= Math.ceil((take * NAME_PROBE_PAGES) / NAME_INDEX_PAGES))
        return spans(KEYS_SHARE) && engine.keysForSmallShares ? { plan: "window-keys", by: "probe" } : { plan: "name-index", by: "probe" };
      return { plan: rows <= WINDOW_FIRST_BOUND ? "window-first" : "window-keys", by: spanned ? "count, with no probe" : "count" };
    };
    const window = (since: number, until: number) => `name=ma&createdSince=${iso(since)}&createdUntil=${iso(until)}`;
    const seen = new Set<string>();
    for (const hours of [1, 2, 4, 8, 24, 72, 240]) {
      for (const start of [now - 9 * day, now - 5 * day, now - 3 * day, now - 1 * day]) {
        const [since, until] = [start, start + hours * hour];
        const { plan, by } = expected(since, until);
        expect(await planOf(window(since, until)), `${hours} hours from ${iso(start)}`).toBe(plan);
        seen.add(`${plan} by the ${by}`);
      }
    }
    // Each way of picking was taken: the probe (the name index) and the count (the window's
    // rows), after the probe and without it.
    expect([...seen].sort()).toEqual(
      [
        "name-index by the probe",
        "window-first by the count",
        "window-first by the count, with no probe",
        ...(engine.keysForSmallShares ? ["window-keys by the probe"] : []),
      ].sort(),
    );
    // In createdAt order a window of one hour's bucket needs no plan (three records in it, so that a page of two has a cursor).
    const hourStart = Math.floor((now - 3 * DAY) / HOUR) * HOUR;
    await sync(
      server(),
      tenant,
      "withdrawals",
      [1, 2, 3].map((m) => withdrawal({ id: `wn-hour-${m}`, deliveredAt: iso(hourStart + m * 60_000) })),
    );
    expect(await planOf(`createdSince=${iso(hourStart)}&createdUntil=${iso(hourStart + HOUR - 1)}`)).toBeUndefined();
  }, 120_000);
});

describe("a window in name order that holds a large share of its tenant's rows", () => {
  it("is read by the name index once its tenant's span is known, and by the plan that picks when the name index's first entries show otherwise", async () => {
    const tenant = await newTenant(server());
    const { db } = server().storage;
    const keyHash = hashKey(tenant.keys.read);
    const now = Date.UTC(2026, 6, 20, 12, 0, 0, 0);
    const names = ["Maria Lopes", "Mário Dias", "Marta Silva", "Marco"];
    const inPrefix = (r: { name: string }) => sortKey(r.name).startsWith(sortKey("ma"));
    // 600 rows a day or so apart over two years (wider than NAME_WEEK_ARMS weeks, so none of
    // the windows below is read by week), every name in the prefix.
    const stored = Array.from({ length: 600 }, (_, i) => ({
      id: `ls-${String(i).padStart(4, "0")}`,
      name: names[i % names.length]!,
      event: now - Math.floor((i * 730 * DAY) / 600),
    }));
    server().clock.now = now;
    await storeNamed(tenant, stored);
    const windowOf = ([since, until]: Bounds) =>
      `name=ma${since === undefined ? "" : `&createdSince=${iso(since)}`}${until === undefined ? "" : `&createdUntil=${iso(until)}`}`;
    const planFor = (bounds: Bounds) => windowPlan(db, withdrawals, keyHash, parseListQuery(withdrawals, windowOf(bounds)));
    type Bounds = [number | undefined, number | undefined];
    const [wide, narrow, openStart]: Bounds[] = [
      [now - 600 * DAY, now],
      [now - 120 * DAY, now - 40 * DAY],
      [undefined, now - 300 * DAY],
    ] as const;
    // Until the tenant's span is found, every first page picks (choosingPage).
    expect(await planFor(wide)).toEqual({});
    const week = (ms: number) => Math.floor((ms + BUCKET_ORIGIN_MS) / NAME_WEEK_MS);
    const events = stored.map((r) => r.event);
    expect(await foundEventSpan(db, withdrawals, keyHash)).toEqual(spanOfWeeks(week(Math.min(...events)), week(Math.max(...events))));
    // A window over at least 1 / NAME_FIRST_SHARE of it is read by the name index first; a narrower one picks.
    expect(await planFor(wide)).toEqual({ probeFirst: true });
    expect(await planFor(openStart)).toEqual({ probeFirst: true });
    expect(await planFor(narrow)).toEqual({});
    const expectWalks = async (rows: typeof stored) => {
      for (const bounds of [wide, narrow, openStart]) {
        const [since, until] = bounds;
        const want = rows
          .filter((r) => inPrefix(r) && (since === undefined || r.event >= since) && (until === undefined || r.event <= until))
          .map((r) => ({ id: r.id, key: sortKey(r.name) }))
          .sort(byName)
          .map((r) => r.id);
        for (const limits of [
          [2, 7],
          [7, 50],
          [50, 2],
        ]) {
          const { items } = await readAll(server(), tenant.keys.read, `/v1/withdrawals?${windowOf(bounds)}`, limits);
          expect(
            items.map((r) => r.id),
            `${windowOf(bounds)} at ${limits.join(", ")}`,
          ).toEqual(want);
        }
      }
    };
    await expectWalks(stored);
    // The name index's first entries show the wide window a share, so its walk keeps that plan,
    // and for a while its first pages read by the name index without the probe.
    expect(await firstPagePlan(tenant, windowOf(wide))).toBe("name-index");
    expect(await planFor(wide)).toEqual({ byName: "name-index" });
    // Rows stored since, five years back, whose names come first in the prefix: the name index's
    // first entries (more than a page of 50 probes) now show the window none, though the span
    // seen still says it holds most.
    const early = Array.from({ length: 1100 }, (_, i) => ({
      id: `le-${String(i).padStart(4, "0")}`,
      name: "Ma Aaron",
      event: now - 5 * 365 * DAY - i * HOUR,
    }));
    await storeNamed(tenant, early);
    server().clock.now = undefined;
    // Read without the probe, a first page still holds the window's rows, past the new ones.
    await expectWalks([...stored, ...early]);
    expect(await firstPagePlan(tenant, windowOf(wide))).toBe("name-index");
    // Once the probe that agreed is EVENT_SPAN_FRESH_MS old, the first page probes again: by the
    // name index it holds no row, and is read by the plan that picks: the window's own rows.
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() + EVENT_SPAN_FRESH_MS });
    try {
      expect(await planFor(wide)).toEqual({ probeFirst: true });
      expect(await firstPagePlan(tenant, windowOf(wide))).toBe("window-first");
      // A walk whose probe turned its page away picks for a while, rather than pay both statements.
      expect(await planFor(wide)).toEqual({});
      await expectWalks([...stored, ...early]);
    } finally {
      vi.useRealTimers();
    }
  }, 120_000);
});

/** Rows in name order as the database orders them: by code point. */
const byName = (a: { key: string; id: string }, b: { key: string; id: string }) =>
  compareCodePoints(a.key, b.key) || compareCodePoints(a.id, b.id);

/** Follows a walk page by page at `limit`, calling `between` after each page with what it has read so far. */
async function walk(
  tenant: TestTenant,
  query: string,
  limit: number,
  between: (read: { id: string; key: string }[], plan?: string) => Promise<void>,
) {
  const read: { id: string; key: string }[] = [];
  const plans: (string | undefined)[] = [];
  let cursor: string | null = null;
  do {
    const url: string = `/v1/withdrawals?limit=${limit}&${query}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`;
    const reply: Reply<{ data: { id: string; employeeName: string }[]; cursor: string | null }> = await get(
      server(),
      url,
      tenant.keys.read,
    );
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    read.push(...reply.body.data.map((r) => ({ id: r.id, key: sortKey(r.employeeName) })));
    cursor = reply.body.cursor;
    plans.push(cursor === null ? undefined : planOfCursor(cursor));
    await between(read, plans[plans.length - 1]);
  } while (cursor !== null);
  return { read, plans };
}

describe("a bounded window in name order of a few weeks", () => {
  /** The start of the week (Monday, UTC) that `ms` lies in, as the index of rows by event week counts them. */
  const weekStart = (ms: number) => Math.floor((ms + BUCKET_ORIGIN_MS) / NAME_WEEK_MS) * NAME_WEEK_MS - BUCKET_ORIGIN_MS;
  const names = ["Maria", "mário", "MARTA", "Ana", "Zé", "Márcia", "ma \u{1D49C}", "ma \uFFFD"];

  it("returns exactly the records of windows of a minute to NAME_WEEK_ARMS weeks, at the weeks' edges, with no plan in their cursors", async () => {
    const tenant = await newTenant(server());
    const now = Date.UTC(2026, 6, 22, 12);
    const first = weekStart(now) - 10 * NAME_WEEK_MS;
    // Around each of eleven week starts, a millisecond before, on and after it, and mid-week.
    const stored = Array.from({ length: 11 }, (_, w) => first + w * NAME_WEEK_MS).flatMap((start, w) =>
      [-1, 0, 1, 3 * DAY].flatMap((offset, o) =>
        names.map((name, n) => ({ id: `ww-${w}-${o}-${n}`, name, event: start + offset + n * 60_000 * (offset === 0 ? 0 : 1) })),
      ),
    );
    server().clock.now = now;
    await storeNamed(tenant, stored);
    server().clock.now = undefined;
    const week = (w: number) => first + w * NAME_WEEK_MS;
    const windows: [number, number, "weeks" | "picked"][] = [
      [week(2) - 1, week(2) + 1, "weeks"],
      [week(2), week(2) + 60_000, "weeks"],
      [week(2), week(3) - 1, "weeks"],
      [week(2), week(3), "weeks"],
      [week(1) + 1, week(1) + NAME_WEEK_ARMS * NAME_WEEK_MS - 1, "weeks"],
      [week(1), week(1) + NAME_WEEK_ARMS * NAME_WEEK_MS, "picked"],
    ];
    for (const [since, until, plan] of windows) {
      for (const prefix of ["ma", "MÁR", "z"]) {
        const want = stored
          .filter((r) => r.event >= since && r.event <= until && sortKey(r.name).startsWith(sortKey(prefix)))
          .map((r) => ({ id: r.id, key: sortKey(r.name) }))
          .sort(byName)
          .map((r) => r.id);
        const query = `name=${encodeURIComponent(prefix)}&createdSince=${iso(since)}&createdUntil=${iso(until)}`;
        const { items } = await readAll(server(), tenant.keys.read, `/v1/withdrawals?${query}`, [1, 3, 50]);
        expect(
          items.map((r) => r.id),
          query,
        ).toEqual(want);
        if (want.length > 2) {
          // Read by week, every page of the walk alike: its cursors carry no plan. A wider window picks one.
          const picked = await firstPagePlan(tenant, query);
          if (plan === "weeks") expect(picked, query).toBeUndefined();
          else expect(picked, query).toBeDefined();
        }
      }
    }
  });

  it("returns the records stored during the walk past its cursor, and no record twice", async () => {
    const tenant = await newTenant(server());
    const now = Date.now();
    const start = weekStart(now) - 2 * NAME_WEEK_MS;
    const [since, until] = [start + HOUR, now + HOUR];
    const store = (rows: { id: string; name: string; event: number }[]) => storeNamed(tenant, rows);
    const records = Array.from({ length: 60 }, (_, i) => ({
      id: `wd-${String(i).padStart(2, "0")}`,
      name: names[i % names.length]!,
      event: since + i * 7 * HOUR,
    }));
    await store(records);
    const inWindow = (r: { event: number }) => r.event >= since && r.event <= until;
    // Stored after the third page: each name, in the window (on time and late, in each week) and out of it.
    const during = names.flatMap((name, n) =>
      [now - 30_000, since + DAY, since + 8 * DAY, since - 1].map((event, e) => ({ id: `wd-new-${n}-${e}`, name, event })),
    );
    const query = `name=ma&createdSince=${iso(since)}&createdUntil=${iso(until)}`;
    let cursorKey: { id: string; key: string } | undefined;
    const { read } = await walk(tenant, query, 4, async (sofar) => {
      if (sofar.length !== 12) return;
      cursorKey = sofar[sofar.length - 1];
      await store(during);
    });
    const named = (r: { name: string }) => sortKey(r.name).startsWith("ma");
    const before = records
      .filter((r) => inWindow(r) && named(r))
      .map((r) => ({ id: r.id, key: sortKey(r.name) }))
      .sort(byName);
    const after = during
      .filter((r) => inWindow(r) && named(r))
      .map((r) => ({ id: r.id, key: sortKey(r.name) }))
      .filter((r) => byName(r, cursorKey!) > 0);
    expect(read.slice(0, 12)).toEqual(before.slice(0, 12));
    expect(read.slice(12)).toEqual([...before.slice(12), ...after].sort(byName));
  });
});

describe("a window in name order open at its end, a few weeks back", () => {
  const weekStart = (ms: number) => Math.floor((ms + BUCKET_ORIGIN_MS) / NAME_WEEK_MS) * NAME_WEEK_MS - BUCKET_ORIGIN_MS;
  const names = ["Maria", "mário", "MARTA", "Ana", "Márcia", "ma \u{1D49C}"];
  const expected = (stored: { id: string; name: string; event: number }[], since: number, prefix: string) =>
    stored
      .filter((r) => r.event >= since && sortKey(r.name).startsWith(sortKey(prefix)))
      .map((r) => ({ id: r.id, key: sortKey(r.name) }))
      .sort(byName)
      .map((r) => r.id);

  it("is read by week up to a day from now, and a record dated past that (a clock ahead) is read all the same", async () => {
    const tenant = await newTenant(server());
    const now = Date.now();
    const first = weekStart(now) - (NAME_WEEK_ARMS + 2) * NAME_WEEK_MS;
    // Around each week start since `first`, a millisecond before, on and after it, and mid-week, up to now.
    const stored = Array.from({ length: NAME_WEEK_ARMS + 3 }, (_, w) => first + w * NAME_WEEK_MS)
      .flatMap((start, w) =>
        [-1, 0, 1, 3 * DAY].flatMap((offset, o) =>
          names.map((name, n) => ({ id: `ow-${w}-${o}-${n}`, name, event: start + offset + n * 60_000 })),
        ),
      )
      .filter((r) => r.event <= now);
    await storeNamed(tenant, stored);
    // Open windows from a minute back to the most weeks read by week (up to the week of a day from now), and one more.
    const widest = weekStart(now + DAY) - (NAME_WEEK_ARMS - 1) * NAME_WEEK_MS;
    const windows: [number, "weeks" | "picked"][] = [
      [now - 60_000, "weeks"],
      [now - 3 * DAY, "weeks"],
      [weekStart(now) - 1, "weeks"],
      [widest + 1, "weeks"],
      [widest - 1, "picked"],
    ];
    const readWindows = async (records: typeof stored, future: boolean) => {
      for (const [since, plan] of windows) {
        for (const prefix of ["ma", "MÁR", "z"]) {
          const query = `name=${encodeURIComponent(prefix)}&createdSince=${iso(since)}`;
          const { items } = await readAll(server(), tenant.keys.read, `/v1/withdrawals?${query}`, [1, 3, 50]);
          expect(
            items.map((r) => r.id),
            query,
          ).toEqual(expected(records, since, prefix));
          if (expected(records, since, prefix).length > 2) {
            // Read by week, every page alike: its cursors carry no plan. A row past the weeks, or a wider window, picks one.
            const picked = await firstPagePlan(tenant, query);
            if (plan === "weeks" && !future) expect(picked, query).toBeUndefined();
            else expect(picked, query).toBeDefined();
          }
        }
      }
    };
    await readWindows(stored, false);
    // A device whose clock runs a month ahead: its record lies past every window's weeks.
    const ahead = { id: "ow-ahead", name: "Maria", event: now + 30 * DAY };
    await storeNamed(tenant, [ahead]);
    await readWindows([...stored, ahead], true);
    // A window that starts past the week of a day from now is no window of weeks.
    const later = `name=ma&createdSince=${iso(now + 2 * NAME_WEEK_MS)}`;
    const { items } = await readAll(server(), tenant.keys.read, `/v1/withdrawals?${later}`, [1, 3]);
    expect(items.map((r) => r.id)).toEqual(["ow-ahead"]);
  });

  it("returns every record once when one dated past its weeks is stored during a walk, its later pages by the plan they then carry", async () => {
    const tenant = await newTenant(server());
    const now = Date.now();
    const since = now - 10 * DAY;
    const records = Array.from({ length: 40 }, (_, i) => ({
      id: `om-${String(i).padStart(2, "0")}`,
      name: names[i % names.length]!,
      event: since + 1 + i * 5 * HOUR,
    }));
    // Rows long before the window, first in name order: a wider window's first page then reads
    // the window's own rows, and its later pages the window's keys.
    const older = Array.from({ length: 3000 }, (_, i) => ({ id: `om-old-${i}`, name: "Ma Aaron", event: since - 100 * DAY + i }));
    await storeNamed(tenant, [...older, ...records]);
    const ahead = names.map((name, n) => ({ id: `om-ahead-${n}`, name, event: now + 40 * DAY }));
    const query = `name=ma&createdSince=${iso(since)}`;
    let cursorKey: { id: string; key: string } | undefined;
    const { read, plans } = await walk(tenant, query, 3, async (sofar) => {
      if (sofar.length !== 6) return;
      cursorKey = sofar[sofar.length - 1];
      await storeNamed(tenant, ahead);
    });
    const named = (r: { name: string }) => sortKey(r.name).startsWith("ma");
    const before = records
      .filter(named)
      .map((r) => ({ id: r.id, key: sortKey(r.name) }))
      .sort(byName);
    const after = ahead
      .filter(named)
      .map((r) => ({ id: r.id, key: sortKey(r.name) }))
      .filter((r) => byName(r, cursorKey!) > 0);
    expect(after.length).toBeGreaterThan(0);
    expect(read.slice(0, 6)).toEqual(before.slice(0, 6));
    expect(read.slice(6)).toEqual([...before.slice(6), ...after].sort(byName));
    // By week, the first pages carry no plan; once the row past the weeks was stored, the page
    // after read the window's own rows, and the later pages its keys.
    expect(plans.slice(0, 2)).toEqual([undefined, undefined]);
    expect(plans[2]).toBe("window-first");
    expect(plans.slice(3, -1), plans.join(",")).toEqual(plans.slice(3, -1).map(() => "window-keys"));
  });

  it("returns every record once when its weeks outgrow NAME_WEEK_ARMS during a walk, its later pages choosing their plan", async () => {
    const tenant = await newTenant(server());
    const start = Date.now();
    // The earliest start whose weeks, up to the week of a day from now, are NAME_WEEK_ARMS.
    const since = weekStart(start + DAY) - (NAME_WEEK_ARMS - 1) * NAME_WEEK_MS + HOUR;
    const records = Array.from({ length: 30 }, (_, i) => ({
      id: `og-${String(i).padStart(2, "0")}`,
      name: names[i % names.length]!,
      event: since + Math.floor(((start - since) * i) / 30),
    }));
    await storeNamed(tenant, records);
    const query = `name=ma&createdSince=${iso(since)}`;
    vi.useFakeTimers({ toFake: ["Date"], now: start });
    try {
      // After two pages, a week later: the window spans one week more than its weeks may.
      const { read, plans } = await walk(tenant, query, 3, async (sofar) => {
        if (sofar.length === 6) vi.setSystemTime(start + NAME_WEEK_MS);
      });
      const want = records
        .filter((r) => sortKey(r.name).startsWith("ma"))
        .map((r) => ({ id: r.id, key: sortKey(r.name) }))
        .sort(byName);
      expect(read).toEqual(want);
      expect(plans.slice(0, 2)).toEqual([undefined, undefined]);
      expect(plans.slice(2, -1).every((plan) => plan !== undefined)).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it("returns an empty page for an open window that holds no record", async () => {
    const tenant = await newTenant(server());
    await storeNamed(tenant, [{ id: "ow-old", name: "Maria", event: Date.now() - 5 * DAY }]);
    const reply = await get<{ data: unknown[]; cursor: string | null }>(
      server(),
      `/v1/withdrawals?name=ma&createdSince=${iso(Date.now() - DAY)}`,
      tenant.keys.read,
    );
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ data: [], cursor: null });
  });
});

describe("a walk of a window in name order by its window's keys", () => {
  /** Thirty days: each walk's window spans more than NAME_WEEK_ARMS weeks, which would be read by week. */
  const D = 30 * DAY;

  /** Stores withdrawals as sync batches of 1,000. */
  async function syncAll(tenant: TestTenant, records: Record<string, unknown>[]) {
    for (let i = 0; i < records.length; i += 1000)
      await sync(
        server(),
        tenant,
        "withdrawals",
        records.slice(i, i + 1000).map((r) => withdrawal(r)),
      );
  }

  it("returns every record of the window once, with those stored during the walk past its cursor, in code-point order", async () => {
    const tenant = await newTenant(server());
    const now = Date.now();
    // Names whose order by code point is not JavaScript's (an astral letter against U+E000 to U+FFFF), on time and late.
    const names = ["Ana", "ana \u{1D49C}", "ana \uFFFD", "ana \uE000", "Anabela", "Ananias", "Bruno"];
    const records = Array.from({ length: 120 }, (_, i) => ({
      id: `wk-${String(i).padStart(3, "0")}`,
      name: names[i % names.length]!,
      event: i % 3 === 0 ? now - 2 * D - i * 60_000 : now - i * 60_000,
    }));
    const store = (rows: typeof records) => storeNamed(tenant, rows);
    // And one record long before the window, so that the first page does not probe the name index but counts (choosingPage).
    await store([...records, { id: "wk-early", name: "Ana", event: now - 600 * D }]);
    const query = `name=an&createdSince=${iso(now - 3 * D)}&createdUntil=${iso(now + HOUR)}`;
    const inWindow = (r: { event: number }) => r.event >= now - 3 * D && r.event <= now + HOUR;
    const expected = records.filter((r) => inWindow(r) && sortKey(r.name).startsWith("an"));
    // Stored after the third page: in the window and not (an event before it, and a name out of
    // the range), on time and late, each name before and after the cursor then.
    const during = names.flatMap((name, n) =>
      [now - 30_000, now - 2 * D, now - 5 * D].map((event, e) => ({ id: `wk-new-${n}-${e}`, name, event })),
    );
    let cursorKey: { key: string; id: string } | undefined;
    const { read, plans } = await walk(tenant, query, 5, async (sofar) => {
      if (sofar.length !== 15) return;
      cursorKey = sofar[sofar.length - 1];
      await store(during);
    });
    // The first page counted the window's rows and read them whole; the later pages read its keys.
    expect(plans[0]).toBe("window-first");
    expect(plans.slice(1, -1).every((p) => p === "window-keys")).toBe(true);
    const after = during.filter(
      (r) => inWindow(r) && sortKey(r.name).startsWith("an") && byName({ key: sortKey(r.name), id: r.id }, cursorKey!) > 0,
    );
    const want = [...expected, ...after].map((r) => ({ id: r.id, key: sortKey(r.name) })).sort(byName);
    const shownAfter = read.slice(15);
    expect(read.slice(0, 15)).toEqual(
      expected
        .map((r) => ({ id: r.id, key: sortKey(r.name) }))
        .sort(byName)
        .slice(0, 15),
    );
    expect(shownAfter).toEqual(want.filter((r) => byName(r, cursorKey!) > 0));
  });

  it("reads by the name index a page whose tenant stored more than KEYS_LATE_BOUND late records since its keys, and the keys again after it", async () => {
    const tenant = await newTenant(server());
    const now = Date.now();
    const records = Array.from({ length: 60 }, (_, i) => ({
      id: `wl-${String(i).padStart(3, "0")}`,
      event: now - i * 60_000 - (i % 2) * D,
    }));
    await sync(
      server(),
      tenant,
      "withdrawals",
      [...records, { id: "wl-early", event: now - 400 * D }].map((r) =>
        withdrawal({ id: r.id, employeeName: `Marta ${r.id}`, deliveredAt: iso(r.event) }),
      ),
    );
    const query = `name=marta&createdSince=${iso(now - 2 * D)}&createdUntil=${iso(now + HOUR)}`;
    // Late records outside the window, more than the bound, stored after the second page.
    const imported = Array.from({ length: KEYS_LATE_BOUND + 1 }, (_, i) => ({
      id: `wl-old-${i}`,
      employeeName: `Marta old ${i}`,
      deliveredAt: iso(now - 30 * D - i * 1000),
    }));
    const { read, plans } = await walk(tenant, query, 7, async (sofar) => {
      if (sofar.length === 14) await syncAll(tenant, imported);
    });
    expect(read.map((r) => r.id)).toEqual(
      records
        .map((r) => ({ id: r.id, key: sortKey(`Marta ${r.id}`) }))
        .sort(byName)
        .map((r) => r.id),
    );
    expect(plans[0]).toBe("window-first");
    expect(plans.slice(1, -1).every((p) => p === "window-keys")).toBe(true);
  });

  it("reads the name index when the window holds more than WINDOW_KEYS_BOUND rows", async () => {
    const tenant = await newTenant(server());
    const now = Date.now();
    // A window of two months and more rows than the bound, and one record long before it, so that its
    // first page neither probes nor fits the count: the name index, its later pages by the keys.
    const records = Array.from({ length: WINDOW_KEYS_BOUND + 1 }, (_, i) => ({
      id: `wb-${String(i).padStart(5, "0")}`,
      employeeName: i % 2 === 0 ? "Mara" : "Zoe",
      deliveredAt: iso(now - HOUR - (i % 1000) * 60_000),
    }));
    records.push({ id: "wb-early", employeeName: "Mara", deliveredAt: iso(now - 400 * D) });
    await syncAll(tenant, records);
    const query = `name=ma&createdSince=${iso(now - 2 * D)}&createdUntil=${iso(now)}`;
    const { read, plans } = await walk(tenant, query, 100, async () => undefined);
    expect(plans[0]).toBe("window-keys");
    expect(plans.slice(1, -1).every((p) => p === "name-index")).toBe(true);
    const want = records
      .filter((r) => r.employeeName === "Mara" && r.id !== "wb-early")
      .map((r) => r.id)
      .sort();
    expect(read.map((r) => r.id)).toEqual(want);
  }, 120_000);
});

describe("windows' keys as a process keeps them", () => {
  const keysOf = (ids: string[], readAt: number) => ({ newest: 0, names: ids.map(() => "ana"), ids, readAt });

  it("forgets a list once KEYS_FRESH_MS old, and the oldest lists first beyond its budget", () => {
    const lists = new KeyLists(5);
    lists.set("a", keysOf(["1", "2"], 1000));
    lists.set("b", keysOf(["3", "4"], 1000));
    expect(lists.get("a", 1000 + KEYS_FRESH_MS - 1)?.ids).toEqual(["1", "2"]);
    lists.set("c", keysOf(["5", "6"], 1000));
    expect(lists.get("a", 1000)).toBeUndefined();
    expect(lists.get("b", 1000)?.ids).toEqual(["3", "4"]);
    expect(lists.get("c", 1000 + KEYS_FRESH_MS)).toBeUndefined();
    lists.set("d", keysOf(["1", "2", "3", "4", "5", "6"], 1000));
    expect(lists.get("d", 1000)).toBeUndefined();
    expect(lists.get("b", 1000)?.ids).toEqual(["3", "4"]);
  });

  it("finds the ids after a cursor in code-point order, whether or not the cursor's row is among them", () => {
    const names = ["a", "a\uE000", "a\uFFFD", "a\u{1D49C}", "b"];
    const keys = { newest: 0, names, ids: names.map((_, i) => `id-${i}`), readAt: 0 };
    expect(idsAfter(keys, { key: "a\uE000", id: "id-1" }, 2)).toEqual(["id-2", "id-3"]);
    expect(idsAfter(keys, { key: "a\uFFFD", id: "id-9" }, 5)).toEqual(["id-3", "id-4"]);
    expect(idsAfter(keys, { key: "a\u{1D49C}", id: "" }, 1)).toEqual(["id-3"]);
    expect(idsAfter(keys, { key: "b", id: "id-4" }, 3)).toEqual([]);
  });
});
