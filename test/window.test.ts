/**
 * The time window (src/lists/window/) at its edges: records whose event date sits on and just
 * outside the window's bounds, stored at the slack's boundaries before and after it, across the
 * boundaries of the late rows' buckets of every level, over the tenant's late range and past it,
 * open-ended, in name order by week and by the name index, and beside a writer. Every window,
 * read at several page sizes, returns exactly the records in it, once each, in the list's order.
 */
import { describe, expect, it, vi } from "vitest";
import { SLACK_MS } from "../src/collections/late-event.js";
import { withdrawals } from "../src/collections/registry.js";
import { sortKey } from "../src/collections/sort-key.js";
import { parseListQuery } from "../src/lists/list.query.js";
import { BUCKET_ORIGIN_MS, weekAt, WEEK_MS as NAME_WEEK_MS } from "../src/lists/window/buckets.js";
import { NAME_WEEK_ARMS, needsSpan, spanOfCursor } from "../src/lists/window/plan.js";
import { withdrawal } from "./support/factories.js";
import { get, newTenant, planOfCursor, readAll, sync, useServer, type Reply, type TestTenant } from "./support/harness.js";
const server = useServer();

const SINCE = Date.UTC(2026, 4, 1, 8, 0, 0, 0);
const UNTIL = SINCE + 2 * SLACK_MS;
const EVENTS = [SINCE - 1, SINCE, SINCE + 1, UNTIL - 1, UNTIL, UNTIL + 1];
const OFFSETS = [-SLACK_MS - 1, -SLACK_MS, 0, SLACK_MS, SLACK_MS + 1];

const iso = (ms: number) => new Date(ms).toISOString();

/** How many times wider than they were written the windows in name order are: wide enough that none is read by week. */
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

/**
 * How the server read a walk in name order's first two pages, from the statements it ran: by
 * week (an arm per event week) or by the name index.
 */
async function walkPlan(tenant: TestTenant, query: string): Promise<"weeks" | "name-index"> {
  const { db } = server().storage;
  const statements = vi.spyOn(db, "executeQuery");
  try {
    const first = await get<{ cursor: string }>(server(), `/v1/withdrawals?limit=2&${query}`, tenant.keys.read);
    await get(server(), `/v1/withdrawals?limit=2&${query}&cursor=${encodeURIComponent(first.body.cursor)}`, tenant.keys.read);
    const pages = statements.mock.calls.flatMap(([c]) => ("sql" in c && c.sql.includes('"name_key"') ? [c.sql] : []));
    const kinds = new Set(pages.map((text) => (text.includes(String(NAME_WEEK_MS)) ? "weeks" : "name-index")));
    expect(kinds.size, pages.join("\n")).toBe(1);
    return [...kinds][0] as "weeks" | "name-index";
  } finally {
    statements.mockRestore();
  }
}

/** The span a walk's second page carries in its cursor: a bounded window's first page reads its own tiling and carries none. */
async function spanOfWalk(tenant: TestTenant, query: string) {
  const first = await get<{ cursor: string }>(server(), `/v1/withdrawals?limit=2&${query}`, tenant.keys.read);
  const second = await get<{ cursor: string }>(
    server(),
    `/v1/withdrawals?limit=2&${query}&cursor=${encodeURIComponent(first.body.cursor)}`,
    tenant.keys.read,
  );
  return spanOfCursor(planOfCursor(second.body.cursor));
}

/** The grid of event dates and storage offsets around the slack's edges, stored as planned. */

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
/** The buckets of the late rows' indexes, and the hour: 8 ** level hours from year 1. */
const BUCKET_MS = [0, 1, 2, 3].map((level) => HOUR * 8 ** level);
/** The start of every bucket of `level` that begins at or after `ms`, counted from year 1. */
const bucketStart = (level: number, ms: number) => {
  const length = BUCKET_MS[level]!;
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
    ...BUCKET_MS.map((_, level) => bucketStart(level, first + 5 * DAY)),
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

describe("time window across the buckets of its late rows", () => {
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
      // Wide enough, or open-ended, that its plan is made by the tenant's span.
      expect(needsSpan({ since, until }, "created", false)).toBe(true);
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
describe("a wide window whose late records of other dates lie among its own", () => {
  it("returns exactly the window at every page size, its later pages by the span its cursors carry", async () => {
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
    expect(needsSpan({ since, until }, "created", false)).toBe(true);
    const want = stored
      .filter((r) => r.event >= since && r.event <= until)
      .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
      .map((r) => r.id);
    // Each page's statements, by what they read: the tiling (buckets), the late rows by createdAt
    // (the bracket's arm), or the bracket's own probes.
    const statements = vi.spyOn(server().storage.db, "executeQuery");
    const kindOf = (text: string) =>
      / as "p\d+"| as "q\d+"/.test(text)
        ? "bracket"
        : text.includes("cast((late_event_at")
          ? "tiles"
          : text.includes('"late_event_at" is not null')
            ? "by-created"
            : "other";
    const walks: string[][] = [];
    for (const limits of [[1, 4], [3], [100]]) {
      const items: string[] = [];
      const spans: string[] = [];
      const requests: string[] = [];
      let cursor: string | null = null;
      do {
        const limit = limits[items.length % limits.length]!;
        const url = `/v1/withdrawals?${query}&limit=${limit}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`;
        statements.mockClear();
        const reply: Reply<{ data: { id: string }[]; cursor: string | null }> = await get(server(), url, tenant.keys.read);
        requests.push(statements.mock.calls.map(([c]) => ("sql" in c ? kindOf(c.sql) : "other")).join("+"));
        expect(reply.status, url).toBe(200);
        items.push(...reply.body.data.map((r) => r.id));
        cursor = reply.body.cursor;
        // The first page reads the window's own tiling; the second finds the tenant's late range
        // and the walk's bracket, which every later cursor carries.
        if (cursor !== null) {
          const span = spanOfCursor(planOfCursor(cursor));
          spans.push(JSON.stringify(span === undefined ? null : [span.late, span.bracket]));
        }
      } while (cursor !== null);
      expect(items, `limits ${limits.join(",")}`).toEqual(want);
      expect(spans[0]).toBe("null");
      const carried = JSON.stringify([[since - 20 * DAY, until + 2 * DAY], { above, below }]);
      expect(
        spans.slice(1).every((span) => span === carried),
        spans.join(" "),
      ).toBe(true);
      // The second page found the span and the bracket, each once a walk.
      expect(
        requests.filter((r) => r.includes("bracket")),
        requests.join(" "),
      ).toEqual([requests[1]]);
      walks.push(requests);
    }
    statements.mockRestore();
    // Later pages between `above` and `below` read two arms; the page that reached `above` short
    // of its rows read the rest by the tiling, in each walk.
    expect(walks.flat().some((r) => r === "by-created")).toBe(true);
    expect(walks.every((requests) => requests.some((r) => r.endsWith("by-created+tiles")))).toBe(true);
  });
});

describe("a wide window imported after its end", () => {
  it("returns exactly the window on its first page and its walk, whatever is stored since", async () => {
    const tenant = await newTenant(server());
    const since = Date.UTC(2025, 2, 3, 5, 17);
    const until = since + 200 * DAY;
    const stored: Stored[] = [];
    for (let day = 0; day <= 200; day += 2) {
      const event = since + day * DAY + (day % 5) * HOUR;
      stored.push({ id: `t-${day}`, event, createdAt: event + 60_000 });
    }
    // Imported a month after the window's end in the order of their events, 50 to a batch (so
    // that batches share a createdAt across buckets): a record every 12 hours through the window
    // and every 20 minutes in its last 8 days, buckets of over a hundred records, and
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
    const firstPage = async (limit: number) => {
      const reply: Reply<{ data: { id: string }[] }> = await get(server(), `/v1/withdrawals?${query}&limit=${limit}`, tenant.keys.read);
      expect(reply.status).toBe(200);
      return reply.body.data.map((r) => r.id);
    };
    for (const limit of [1, 7, 100]) expect(await firstPage(limit), `limit ${limit}`).toEqual(want.slice(0, limit));
    const walked = await readAll(server(), tenant.keys.read, `/v1/withdrawals?${query}`);
    expect(walked.items.map((r: { id: string }) => r.id)).toEqual(want);
    // Late records of other dates stored since, then one of the window, then many of other dates.
    const later = (id: string, event: number, at: number): Stored => ({ id, event, createdAt: at });
    const outside = Array.from({ length: 5 }, (_, i) => later(`o-${i}`, since - DAY - i * HOUR, importedAt + DAY));
    const inside = [later("n-0", since + 3 * DAY, importedAt + 2 * DAY)];
    const many = Array.from({ length: 101 }, (_, i) => later(`m-${i}`, until + DAY + i * MINUTE, importedAt + 3 * DAY));
    let all = stored;
    for (const batch of [outside, inside, many]) {
      await storeAsPlanned(tenant, batch);
      all = [...all, ...batch];
      const now = windowOf(all);
      expect(await firstPage(100)).toEqual(now.slice(0, 100));
      expect((await readAll(server(), tenant.keys.read, `/v1/withdrawals?${query}`, [100])).items.map((r) => r.id)).toEqual(now);
    }
    expect(windowOf(all)[0]).toBe("n-0");
    // A window of the tenant's that holds no record.
    const empty = `/v1/withdrawals?createdSince=${iso(since - 18 * DAY)}&createdUntil=${iso(since - 2 * DAY)}`;
    const reply: Reply<{ data: unknown[]; cursor: string | null }> = await get(server(), empty, tenant.keys.read);
    expect([reply.status, reply.body]).toEqual([200, { data: [], cursor: null }]);
  });
});

describe("a bounded window walked again after late records were stored", () => {
  it("finds every late record stored since, inside the late range its last walk found and outside it", async () => {
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
    const window = (since: number, until: number) => `createdSince=${iso(since)}&createdUntil=${iso(until)}`;
    const [since, until] = [firstHour + 2 * HOUR + 1, lastHour - 2 * HOUR - 1];
    expect(needsSpan({ since, until }, "created", false)).toBe(true);
    // A walk finds the late range on its second page, which its cursors carry from there.
    expect((await spanOfWalk(tenant, window(since, until)))?.late).toEqual([firstHour + 60_000, lastHour + 60_000]);
    // A late record stored since, inside the window: a new walk finds it.
    const since2 = { id: "l-since", event: firstHour + 400 * DAY, createdAt: lastHour + 10 * DAY };
    await storeAsPlanned(tenant, [since2]);
    const want = [...stored, since2]
      .filter((r) => r.event >= since && r.event <= until)
      .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
      .map((r) => r.id);
    expect((await readAll(server(), tenant.keys.read, `/v1/withdrawals?${window(since, until)}`, [3])).items.map((r) => r.id)).toEqual(
      want,
    );
    // Late records stored since outside the late range, in a wider window after and before it, and
    // before that window (where a bucket that reaches past the range may lie): a new walk finds each.
    const wide = window(firstHour - 5 * DAY, lastHour + 5 * DAY);
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
describe("a window of a tenant that had no late records", () => {
  it("reads only its on-time records, and finds a late one stored since", async () => {
    const tenant = await newTenant(server());
    const base = Date.UTC(2022, 3, 17, 19);
    const stored: Stored[] = [];
    for (let day = 0; day <= 400; day += 10) stored.push({ id: `t-${day}`, event: base + day * DAY, createdAt: base + day * DAY + 1 });
    await storeAsPlanned(tenant, stored);
    const window = `createdSince=${iso(base)}&createdUntil=${iso(base + 400 * DAY)}`;
    expect(needsSpan(parseListQuery(withdrawals, window), "created", false)).toBe(true);
    expect((await spanOfWalk(tenant, window))?.late).toBeNull();
    const late = { id: "l-since", event: base + 200 * DAY, createdAt: base + 500 * DAY };
    await storeAsPlanned(tenant, [late]);
    const want = [late, ...stored].sort((a, b) => b.createdAt - a.createdAt).map((r) => r.id);
    expect((await readAll(server(), tenant.keys.read, `/v1/withdrawals?${window}`, [3])).items.map((r) => r.id)).toEqual(want);
  });
});
describe("a narrow window, which needs no span", () => {
  it("tiles its own dates, carries no span in its cursors, and finds a late record stored since", async () => {
    const tenant = await newTenant(server());
    const base = Date.UTC(2022, 3, 17, 19);
    const stored: Stored[] = [];
    for (let hour = 0; hour <= 48; hour += 4)
      stored.push({ id: `t-${hour}`, event: base + hour * HOUR, createdAt: base + hour * HOUR + 1 });
    await storeAsPlanned(tenant, stored);
    // Past, and short enough that neither engine must narrow it: a few buckets of eight hours.
    const window = `createdSince=${iso(base + 5 * HOUR)}&createdUntil=${iso(base + 29 * HOUR)}`;
    expect(needsSpan(parseListQuery(withdrawals, window), "created", false)).toBe(false);
    const { body } = await get<{ cursor: string }>(server(), `/v1/withdrawals?limit=2&${window}`, tenant.keys.read);
    expect(planOfCursor(body.cursor)).toBeUndefined();
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
describe("a window's first page beside a writer", () => {
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

  it("shows no record stored after it found its tenant's span, so its cursor passes none", async () => {
    const { tenant, firstHour, lastHour, stored } = await storeTwoLateHours([1]);
    // Open-ended, so read by its span on every engine.
    const since = firstHour - DAY;
    const { db } = server().storage;
    // Between the span's statement and the page's: a late record whose event lies in the window
    // but past the late range and any bucket that reaches past it, then one on time, stored after it.
    const later = lastHour + 6 * DAY;
    const execute = db.executeQuery.bind(db);
    let written = false;
    const statements = vi.spyOn(db, "executeQuery").mockImplementation(async (compiled, ...rest) => {
      const result = await execute(compiled, ...rest);
      if (!written && "sql" in compiled && compiled.sql.includes("late_low")) {
        written = true;
        await storeAsPlanned(tenant, [
          { id: "late-since", event: lastHour + 8 * 365 * DAY, createdAt: later },
          { id: "on-time-since", event: later + 60_000, createdAt: later + 120_000 },
        ]);
      }
      return result;
    });
    try {
      const first = await get<{ data: { id: string }[]; cursor: string }>(
        server(),
        `/v1/withdrawals?limit=5&createdSince=${iso(since)}`,
        tenant.keys.read,
      );
      expect(written, "the records were stored between the span and the page").toBe(true);
      const before = stored
        .filter((r) => r.event >= since)
        .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
        .map((r) => r.id);
      expect(first.body.data.map((r) => r.id)).toEqual(before.slice(0, 5));
      // A walk begun now finds both.
      const { items } = await readAll(server(), tenant.keys.read, `/v1/withdrawals?createdSince=${iso(since)}`, [5]);
      expect(items.map((r) => r.id)).toEqual(["on-time-since", "late-since", ...before]);
    } finally {
      statements.mockRestore();
    }
  });

  it.each([
    ["open at its end", "since"],
    ["that ends now", "now"],
    ["open at its start", "until"],
  ] as const)("reads its later pages, a window %s, which every record below its cursor lies in", async (_label, open) => {
    const { tenant, firstHour, lastHour, stored } = await storeTwoLateHours([1, 59]);
    const now = Date.now();
    const [since, until] =
      open === "since" ? [firstHour - DAY, undefined] : open === "now" ? [firstHour - DAY, now] : [undefined, lastHour + DAY];
    const inWindow = (event: number) => (since === undefined || event >= since) && (until === undefined || event <= until);
    const bounds = [since === undefined ? "" : `createdSince=${iso(since)}`, until === undefined ? "" : `createdUntil=${iso(until)}`];
    const path = `/v1/withdrawals?${bounds.filter((b) => b !== "").join("&")}`;
    // Records stored last, outside the window.
    if (open !== "until")
      await storeAsPlanned(
        tenant,
        Array.from({ length: 10 }, (_, i) => ({ id: `x-${i}`, event: firstHour - 30 * DAY + i, createdAt: lastHour + 10 * DAY + i })),
      );
    const first = await get<{ data: { id: string }[]; cursor: string }>(server(), `${path}&limit=4`, tenant.keys.read);
    // The walk finds the late range, which its cursors carry.
    const lateLow = open === "until" ? firstHour + 60_000 : firstHour - 30 * DAY;
    // An open-ended window's first page finds it; a bounded one's second page.
    const query = bounds.filter((b) => b !== "").join("&");
    const span = open === "now" ? await spanOfWalk(tenant, query) : spanOfCursor(planOfCursor(first.body.cursor));
    expect(span?.late).toEqual([lateLow, lastHour + 59 * 60_000]);
    // Late records stored now lie outside the range found, and all above the cursor.
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
    // A walk begun now finds the records stored since in the window. The window that ends now holds neither.
    const { items } = await readAll(server(), tenant.keys.read, path, [4]);
    const storedSince = { since: ["late-after"], now: [], until: ["late-before"] }[open];
    expect(items.map((r) => r.id)).toEqual([...storedSince, ...want]);
  });
});

describe("a window that reaches the present", () => {
  it("returns exactly the records in it, stored last or among an import of other dates", async () => {
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
    }
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
  it("returns exactly the window in name order by the name index, the event date checked on its entries", async () => {
    const tenant = await newTenant(server());
    const now = Date.UTC(2026, 6, 20, 12, 0, 0, 0);
    const names = ["Maria Lopes", "mário Dias", "MARTA Silva", "Ana Maria", "Zé Marques", "Márcia", "marco"];
    // Rows over ten `days`, most of them late, read through windows from half an `hour` (which
    // fits in a page of 60) to all of them. A `day` is TIME_SCALE days, so that every window spans
    // more than NAME_WEEK_ARMS weeks: a narrower one is read by week.
    const [day, hour] = [TIME_SCALE * DAY, TIME_SCALE * HOUR];
    const stored = Array.from({ length: 5300 }, (_, i) => ({
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
    // In createdAt order a window of one hour needs no span: its cursors carry none.
    const hourStart = Math.floor((now - 3 * DAY) / HOUR) * HOUR;
    await sync(
      server(),
      tenant,
      "withdrawals",
      [1, 2, 3].map((m) => withdrawal({ id: `wn-hour-${m}`, deliveredAt: iso(hourStart + m * 60_000) })),
    );
    const { body } = await get<{ cursor: string }>(
      server(),
      `/v1/withdrawals?limit=2&createdSince=${iso(hourStart)}&createdUntil=${iso(hourStart + HOUR - 1)}`,
      tenant.keys.read,
    );
    expect(planOfCursor(body.cursor)).toBeUndefined();
  }, 120_000);
});

/** Code-point order, as the database orders names and ids (JavaScript's `<` compares UTF-16 code units). */
const compareCodePoints = (a: string, b: string) => {
  const [x, y] = [Array.from(a), Array.from(b)];
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
};

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
    const windows: [number, number, "weeks" | "name-index"][] = [
      [week(2) - 1, week(2) + 1, "weeks"],
      [week(2), week(2) + 60_000, "weeks"],
      [week(2), week(3) - 1, "weeks"],
      [week(2), week(3), "weeks"],
      [week(1) + 1, week(1) + NAME_WEEK_ARMS * NAME_WEEK_MS - 1, "weeks"],
      [week(1), week(1) + NAME_WEEK_ARMS * NAME_WEEK_MS, "name-index"],
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
          // Read by week, every page of the walk alike; a wider window by the name index.
          expect(await walkPlan(tenant, query), query).toBe(plan);
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

  it("is read by week up to the tenant's last week, and a record dated past now (a clock ahead) is read all the same", async () => {
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
    // Open windows from a minute back to the most weeks read by week (up to the tenant's last week), and one more.
    const widest = weekStart(now) - (NAME_WEEK_ARMS - 1) * NAME_WEEK_MS;
    const windows = [now - 60_000, now - 3 * DAY, weekStart(now) - 1, widest + 1, widest - 1];
    const readWindows = async (records: typeof stored) => {
      for (const since of windows) {
        for (const prefix of ["ma", "MÁR", "z"]) {
          const query = `name=${encodeURIComponent(prefix)}&createdSince=${iso(since)}`;
          const { items } = await readAll(server(), tenant.keys.read, `/v1/withdrawals?${query}`, [1, 3, 50]);
          expect(
            items.map((r) => r.id),
            query,
          ).toEqual(expected(records, since, prefix));
          if (expected(records, since, prefix).length > 2) {
            // Read by week up to the tenant's last week, when that is at most NAME_WEEK_ARMS weeks; else by the name index.
            const weeks = weekAt(Math.max(...records.map((r) => r.event))) - weekAt(since) + 1;
            expect(await walkPlan(tenant, query), query).toBe(weeks <= NAME_WEEK_ARMS ? "weeks" : "name-index");
          }
        }
      }
    };
    await readWindows(stored);
    // A device whose clock runs a month ahead: its record lies past every window's weeks.
    const ahead = { id: "ow-ahead", name: "Maria", event: now + 30 * DAY };
    await storeNamed(tenant, [ahead]);
    await readWindows([...stored, ahead]);
    // A window that starts past the week of a day from now is no window of weeks.
    const later = `name=ma&createdSince=${iso(now + 2 * NAME_WEEK_MS)}`;
    const { items } = await readAll(server(), tenant.keys.read, `/v1/withdrawals?${later}`, [1, 3]);
    expect(items.map((r) => r.id)).toEqual(["ow-ahead"]);
  });

  it("returns every record committed before its walk once when one dated past its weeks is stored during it", async () => {
    const tenant = await newTenant(server());
    const now = Date.now();
    const since = now - 10 * DAY;
    const records = Array.from({ length: 40 }, (_, i) => ({
      id: `om-${String(i).padStart(2, "0")}`,
      name: names[i % names.length]!,
      event: since + 1 + i * 5 * HOUR,
    }));
    // Rows long before the window, first in name order, which the weeks never read.
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
    // The walk reads by the weeks its first page found the tenant's rows in, which its cursors
    // carry: every record committed before it, once; those dated past its weeks are the next walk's.
    expect(read).toEqual(before);
    expect(new Set(plans.slice(0, -1)).size).toBe(1);
    const { items } = await readAll(server(), tenant.keys.read, `/v1/withdrawals?${query}`, [3]);
    expect(items.map((r) => r.id)).toEqual(
      [...before, ...ahead.filter(named).map((r) => ({ id: r.id, key: sortKey(r.name) }))].sort(byName).map((r) => r.id),
    );
  });

  it("reads by the same plan when the clock moves during its walk: its plan is made by its span, not by the time", async () => {
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
      expect(new Set(plans.slice(0, -1)).size).toBe(1);
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

describe("a wide window in name order walked while records are stored", () => {
  /** Thirty days: each walk's window spans more than NAME_WEEK_ARMS weeks, which would be read by week. */
  const D = 30 * DAY;

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
    // And one record long before the window.
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
    // A bounded window: its cursors carry no span.
    expect(plans.every((p) => p === undefined)).toBe(true);
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
});
