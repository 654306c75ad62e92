/**
 * The time window's two arms (see src/lists/window.ts) at their edges: records whose event
 * date sits on and just outside the window's bounds, stored at the slack's boundaries before
 * and after it. Every window shape, read at several page sizes, returns exactly the records
 * in the window, once each, newest first by createdAt. Late records are read by the day of
 * their event: windows of up to MAX_LATE_DAYS days day by day, longer ones as one range, so
 * both are checked at day boundaries too.
 */
import { describe, expect, it } from "vitest";
import { SLACK_MS } from "../src/collections/late-event.js";
import { LATE_DAY_MS, MAX_LATE_DAYS } from "../src/lists/window.js";
import { withdrawal } from "./support/factories.js";
import { newTenant, readAll, sync, useServer } from "./support/harness.js";

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
 * Stores the grid in ascending createdAt, records sharing one in one batch, so that every
 * record is stamped exactly as planned (a list's createdAt never goes backwards).
 */
async function storeGrid() {
  const tenant = await newTenant(server());
  const stored: Stored[] = EVENTS.flatMap((event, e) =>
    OFFSETS.map((offset, o) => ({ id: `w-${e}-${o}`, event, createdAt: event + offset })),
  );
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
      // Synced days later, a little later than the slack, or early (a clock running ahead).
      for (const [o, offset] of [3 * LATE_DAY_MS + day, SLACK_MS + 1 + e, -(SLACK_MS + 1), 0].entries()) {
        stored.push({ id: `d-${day}-${e}-${o}`, event, createdAt: event + offset });
      }
    }
  }
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
  return { tenant, stored, first: FIRST };
}

describe("time window over days of late records", () => {
  it("returns exactly the records in windows of one to more than MAX_LATE_DAYS days, aligned to midnight or not", async () => {
    const { tenant, stored, first } = await storeLateAcrossDays();
    const windows: [number, number][] = [];
    for (const days of [1, 2, MAX_LATE_DAYS, MAX_LATE_DAYS + 1]) {
      for (const start of [first, first + LATE_DAY_MS, first + 1, first - 1, first + LATE_DAY_MS / 2]) {
        windows.push([start, start + days * LATE_DAY_MS - 1], [start, start + days * LATE_DAY_MS]);
      }
    }
    for (const [since, until] of windows) {
      const want = stored
        .filter((r) => r.event >= since && r.event <= until)
        .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? 1 : -1))
        .map((r) => r.id);
      expect(want.length, "the window holds records").toBeGreaterThan(0);
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
