/**
 * The time window's two arms (see src/lists/window.ts) at their edges: records whose event
 * date sits on and just outside the window's bounds, stored at the slack's boundaries before
 * and after it. Every window shape, read at several page sizes, returns exactly the records
 * in the window, once each, newest first by createdAt.
 */
import { describe, expect, it } from "vitest";
import { SLACK_MS } from "../src/collections/late-event.js";
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
