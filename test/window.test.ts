/**
 * The time window's two arms (see src/lists/window.ts) at their edges: records whose event
 * date sits on and just outside the window's bounds, stored at the slack's boundaries before
 * and after it. Every window shape, read at several page sizes, returns exactly the records
 * in the window, once each, newest first by createdAt. Late records are read by the day of
 * their event: windows of 12 hours to 7 days day by day, others as one range, so both are
 * checked at day boundaries too.
 */
import { describe, expect, it } from "vitest";
import { SLACK_MS } from "../src/collections/late-event.js";
import { withdrawals } from "../src/collections/registry.js";
import { parseListQuery } from "../src/lists/list.query.js";
import { DAY_BY_DAY, LATE_DAY_MS, windowValues } from "../src/lists/window.js";
import { withdrawal } from "./support/factories.js";
import { newTenant, readAll, sync, useServer, type TestTenant } from "./support/harness.js";

const server = useServer();

const SINCE = Date.UTC(2026, 4, 1, 8, 0, 0, 0);
const UNTIL = SINCE + 2 * SLACK_MS;
const EVENTS = [SINCE - 1, SINCE, SINCE + 1, UNTIL - 1, UNTIL, UNTIL + 1];
const OFFSETS = [-SLACK_MS - 1, -SLACK_MS, 0, SLACK_MS, SLACK_MS + 1];

const iso = (ms: number) => new Date(ms).toISOString();

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

/**
 * Records stored long after (or before) their event, on both sides of every midnight of ten
 * days around the epoch, where whole days count from (the day before it is day -0, as
 * integer division rounds toward zero), plus some on time.
 */
async function storeLateAcrossDays() {
  const tenant = await newTenant(server());
  const FIRST = -3 * LATE_DAY_MS;
  const stored: Stored[] = [];
  for (let day = 0; day <= 10; day++) {
    const midnight = FIRST + day * LATE_DAY_MS;
    for (const [e, event] of [midnight - 1, midnight, midnight + LATE_DAY_MS / 2].entries()) {
      // Synced days later, a little later than the slack, or early (a clock running ahead,
      // by a little or by days), or on time.
      for (const [o, offset] of [3 * LATE_DAY_MS + day, SLACK_MS + 1 + e, -(SLACK_MS + 1), -2 * LATE_DAY_MS - e, 0].entries()) {
        stored.push({ id: `d-${day}-${e}-${o}`, event, createdAt: event + offset });
      }
    }
  }
  await storeAsPlanned(tenant, stored);
  return { tenant, stored, first: FIRST };
}

const HOUR = 3_600_000;
/** Window lengths either side of where reading late rows day by day starts and stops. */
const LENGTHS = [
  60_000,
  DAY_BY_DAY.shortestMs - 1,
  DAY_BY_DAY.shortestMs,
  LATE_DAY_MS - 1,
  LATE_DAY_MS,
  2 * LATE_DAY_MS,
  DAY_BY_DAY.longestMs,
  DAY_BY_DAY.longestMs + 1,
];

describe("time window over days of late records", () => {
  it("reads late records day by day for windows of 12 hours to 7 days with both bounds, and only those", () => {
    const days = (query: string) => Object.keys(windowValues(parseListQuery(withdrawals, query))).filter((k) => /^lateDay\d+$/.test(k));
    const start = Date.UTC(2026, 5, 1, 18);
    const window = (length: number) => `createdSince=${iso(start)}&createdUntil=${iso(start + length)}`;
    expect(LENGTHS.map((length) => days(window(length)).length)).toEqual([0, 0, 2, 2, 2, 3, 8, 0]);
    // A week from midnight to midnight, inclusive, touches eight days; a local one too.
    expect(days("createdSince=2026-06-01T00:00:00Z&createdUntil=2026-06-08T00:00:00Z")).toHaveLength(8);
    expect(days("createdSince=2026-06-01T00:00:00-03:00&createdUntil=2026-06-07T23:59:59-03:00")).toHaveLength(8);
    expect(days(`createdSince=${iso(start)}`)).toEqual([]);
    expect(days(`createdUntil=${iso(start)}`)).toEqual([]);
  });

  it("returns exactly the records in windows of a minute to more than a week, aligned to midnight or not", async () => {
    const { tenant, stored, first } = await storeLateAcrossDays();
    const windows: [number, number][] = [];
    for (const length of LENGTHS) {
      for (const start of [first, first + LATE_DAY_MS, first + 1, first - 1, first + LATE_DAY_MS / 2, first - HOUR]) {
        windows.push([start, start + length]);
      }
    }
    for (const [since, until] of windows) {
      const want = stored
        .filter((r) => r.event >= since && r.event <= until)
        .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
        .map((r) => r.id);
      for (const limits of [[1, 4], [100]]) {
        const query = `createdSince=${iso(since)}&createdUntil=${iso(until)}`;
        const { items } = await readAll(server(), tenant.keys.read, `/v1/withdrawals?${query}`, limits);
        expect(
          items.map((r) => r.id),
          `${query} limits ${limits.join(",")}`,
        ).toEqual(want);
      }
    }
  });
});

describe("time window narrower than a millisecond", () => {
  it("holds nothing: a lower bound rounded up past an equal upper one is 200 and an empty page", async () => {
    const { tenant, first } = await storeLateAcrossDays();
    // Stored times are whole milliseconds, so the window (midnight - 0.5 ms, midnight - 0.5 ms] holds none.
    for (const midnight of [first, first + LATE_DAY_MS, 5 * LATE_DAY_MS]) {
      const at = `${iso(midnight - 1).slice(0, -1)}5Z`;
      const { items } = await readAll(server(), tenant.keys.read, `/v1/withdrawals?createdSince=${at}&createdUntil=${at}`, [10]);
      expect(items, at).toEqual([]);
    }
  });
});
