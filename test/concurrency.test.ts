/**
 * Reads while writes run: a client paging newest-first, or through a time window, newest first
 * or in name order, while sync batches keep committing, gets every record committed before its
 * first page exactly once, in order, and never one twice.
 */
import { describe, expect, it } from "vitest";
import { sortKey } from "../src/collections/sort-key.js";
import { needsSpan, planOf, spanOfCursor } from "../src/lists/window/plan.js";
import { withdrawal } from "./support/factories.js";
import { get, newTenant, planOfCursor, sync, useServer, type TestServer, type TestTenant } from "./support/harness.js";
import type { Reply } from "./support/harness.js";

const server = useServer();
const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;

/** Syncs batches of new withdrawals until stopped; records every acknowledged record. */
function startWriter(srv: TestServer, tenant: TestTenant, make: (i: number) => Record<string, unknown>) {
  const acknowledged: Record<string, unknown>[] = [];
  let running = true;
  let batches = 0;
  const done = (async () => {
    for (let n = 0; running; n += 1) {
      const batch = Array.from({ length: 25 }, (_, i) => make(n * 25 + i));
      await sync(srv, tenant, "withdrawals", batch);
      acknowledged.push(...batch);
      batches += 1;
    }
  })();
  return {
    acknowledged,
    batches: () => batches,
    stop: async () => {
      running = false;
      await done;
    },
  };
}

async function whenBatches(writer: { batches(): number }, n: number): Promise<void> {
  while (writer.batches() < n) await new Promise((resolve) => setTimeout(resolve, 5));
}

/**
 * Pages through `path` with small pages while the writer runs; returns the ids in order, each
 * with its createdAt and its name's sort key.
 */
async function pageThrough(
  srv: TestServer,
  key: string,
  path: string,
  limit = 7,
): Promise<{ ids: string[]; keys: [string, string][]; names: [string, string][]; plans: (string | undefined)[] }> {
  const ids: string[] = [];
  const plans: (string | undefined)[] = [];
  const keys: [string, string][] = [];
  const names: [string, string][] = [];
  let cursor: string | null = null;
  do {
    const sep = path.includes("?") ? "&" : "?";
    const reply: Reply<any> = await get(
      srv,
      `${path}${sep}limit=${limit}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`,
      key,
    );
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    for (const item of reply.body.data) {
      ids.push(item.id);
      keys.push([item.createdAt, item.id]);
      names.push([sortKey(item.employeeName), item.id]);
    }
    cursor = reply.body.cursor;
    if (cursor !== null) plans.push(planOfCursor(cursor));
  } while (cursor !== null);
  return { ids, keys, names, plans };
}

/**
 * A walk of a window read each record once: every one of `before` (committed before its first
 * page), and none of the records `written` that `matches` leaves out.
 */
function expectWindowRead(
  ids: string[],
  before: string[],
  written: Record<string, unknown>[],
  matches: (r: Record<string, unknown>) => boolean,
) {
  expect(new Set(ids).size, "no record twice").toBe(ids.length);
  expect(
    before.filter((id) => !ids.includes(id)),
    "records of the window committed before the read",
  ).toEqual([]);
  const others = new Set(written.filter((r) => !matches(r)).map((r) => r.id));
  expect(
    ids.filter((id) => others.has(id)),
    "records outside the window",
  ).toEqual([]);
}

function expectNewestFirst(keys: [string, string][]): void {
  for (let i = 1; i < keys.length; i += 1) {
    const [a, b] = [keys[i - 1]!, keys[i]!];
    expect(a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]), `${JSON.stringify(a)} before ${JSON.stringify(b)}`).toBe(true);
  }
}

/**
 * Walks the window from `windowStart` to `windowEnd` in createdAt order while a writer syncs
 * `make`'s records, and checks that it read every record of the window committed before its
 * first page once, none outside it, newest first. Resolves to the walk and what was written.
 */
async function walkWindowWhileWriting(
  srv: TestServer,
  tenant: TestTenant,
  seeded: Record<string, unknown>[],
  make: (i: number) => Record<string, unknown>,
  [windowStart, windowEnd]: [number, number | undefined],
) {
  const writer = startWriter(srv, tenant, make);
  await whenBatches(writer, 2);
  const inWindow = (r: Record<string, unknown>) => {
    const at = Date.parse(r.deliveredAt as string);
    return at >= windowStart && (windowEnd === undefined || at <= windowEnd);
  };
  const before = [...seeded, ...writer.acknowledged].filter(inWindow).map((r) => r.id as string);
  const until = windowEnd === undefined ? "" : `&createdUntil=${new Date(windowEnd).toISOString()}`;
  const window = `createdSince=${new Date(windowStart).toISOString()}${until}`;
  const read = await pageThrough(srv, tenant.keys.read, `/v1/withdrawals?${window}`);
  await writer.stop();
  expectWindowRead(read.ids, before, [...seeded, ...writer.acknowledged], inWindow);
  expectNewestFirst(read.keys);
  return { read, before, batches: writer.batches() };
}

describe("paging while sync batches commit", () => {
  it("returns every record committed before the first page exactly once, newest first", async () => {
    const srv = server();
    const tenant = await newTenant(srv);
    const seeded = Array.from({ length: 300 }, () => withdrawal());
    for (let i = 0; i < seeded.length; i += 100) await sync(srv, tenant, "withdrawals", seeded.slice(i, i + 100));

    const writer = startWriter(srv, tenant, () => withdrawal());
    await whenBatches(writer, 2);
    const before = new Set([...seeded, ...writer.acknowledged].map((r) => r.id as string));
    const read = await pageThrough(srv, tenant.keys.read, "/v1/withdrawals");
    await writer.stop();

    expect(new Set(read.ids).size, "no record twice").toBe(read.ids.length);
    expect(
      [...before].filter((id) => !read.ids.includes(id)),
      "records committed before the first page",
    ).toEqual([]);
    expectNewestFirst(read.keys);
    expect(writer.batches(), "writes ran during the read").toBeGreaterThan(2);
  });

  // A bounded window reads its first page by its own tiling and finds its span on its second; one
  // open at its end finds it on its first page, which then shows no record stored after it
  // (lists/window/).
  it.each([
    ["that reaches the present", DAY, 160],
    ["that ends two hours before the last records", -2 * HOUR, 80],
    ["open at its end", undefined, 160],
  ])("returns every record of a time window %s committed before the read, on time and late, exactly once", async (_label, end, least) => {
    const srv = server();
    const tenant = await newTenant(srv);
    const now = Date.now();
    const windowStart = now - 30 * DAY;
    const windowEnd = end === undefined ? undefined : now + end;
    // On time (stored minutes after the event), late (weeks after), and outside the window.
    const eventAt = (i: number) => [now - 5 * MINUTE, now - 12 * DAY - i * MINUTE, now - 60 * DAY][i % 3]!;
    const make = (i: number) => withdrawal({ deliveredAt: new Date(eventAt(i)).toISOString() });
    const seeded = Array.from({ length: 240 }, (_, i) => make(i));
    for (let i = 0; i < seeded.length; i += 80) await sync(srv, tenant, "withdrawals", seeded.slice(i, i + 80));

    const { before } = await walkWindowWhileWriting(srv, tenant, seeded, make, [windowStart, windowEnd]);
    expect(before.length).toBeGreaterThan(least);
  });

  // A wide window that ends in the past, its late records among late ones of other dates, some
  // stored during the walk: its later pages read by the span its first page found.
  it("returns every record of a wide window committed before the read exactly once, its later pages by its first page's span", async () => {
    const srv = server();
    const tenant = await newTenant(srv);
    const now = Date.now();
    const [windowStart, windowEnd] = [now - 30 * DAY, now - 10 * DAY];
    expect(needsSpan({ since: windowStart, until: windowEnd }, "created", false)).toBe(true);
    // Late records in the window and dated before it, stored first; then late ones in it; and while the
    // walk runs, late ones in it and after it.
    const late = (at: number) => withdrawal({ deliveredAt: new Date(at).toISOString() });
    const earlier = Array.from({ length: 60 }, (_, i) => late(now - 60 * DAY - i * MINUTE));
    const inside = (i: number) => late(i % 2 === 0 ? now - 12 * DAY - i * MINUTE : windowStart + i * MINUTE);
    const make = (i: number) => (i % 3 === 0 ? late(now - 5 * DAY - i * MINUTE) : inside(i));
    const seeded = [
      ...Array.from({ length: 20 }, (_, i) => inside(1000 + i)),
      ...earlier,
      ...Array.from({ length: 240 }, (_, i) => inside(i)),
    ];
    for (let i = 0; i < seeded.length; i += 60) await sync(srv, tenant, "withdrawals", seeded.slice(i, i + 60));

    const { read, before, batches } = await walkWindowWhileWriting(srv, tenant, seeded, make, [windowStart, windowEnd]);
    expect(before.length).toBeGreaterThan(150);
    expect(batches, "writes ran during the read").toBeGreaterThan(2);
    // The first page reads the window's own tiling; every later cursor carries the late range and
    // the bracket the second page found.
    const spans = read.plans.map((plan) => spanOfCursor(plan));
    expect(spans[0]).toBeUndefined();
    expect(new Set(spans.slice(1).map((span) => JSON.stringify(span))).size, read.plans.join(" ")).toBe(1);
    expect(spans[1]?.late).not.toBeNull();
    expect(spans[1]?.bracket).toMatchObject({ above: expect.any(Number) });
  });

  // A wide window whose late records were imported in the order of their events, with more stored during the walk.
  it("returns every record of a wide window imported in event order committed before the read exactly once", async () => {
    const srv = server();
    const tenant = await newTenant(srv);
    const now = Date.now();
    const [windowStart, windowEnd] = [now - 30 * DAY, now - 10 * DAY];
    // Late records dated before the window, through it, and in its last hours, stored in that
    // order; while the walk runs, late ones in it and after it.
    const late = (at: number) => withdrawal({ deliveredAt: new Date(at).toISOString() });
    const seeded = [
      ...Array.from({ length: 60 }, (_, i) => late(now - 60 * DAY - i * MINUTE)),
      ...Array.from({ length: 60 }, (_, i) => late(windowStart + i * 5 * HOUR)),
      ...Array.from({ length: 240 }, (_, i) => late(windowEnd - i * MINUTE)),
    ];
    for (let i = 0; i < seeded.length; i += 60) await sync(srv, tenant, "withdrawals", seeded.slice(i, i + 60));
    const make = (i: number) => late(i % 2 === 0 ? windowStart + 2 * HOUR + i * MINUTE : now - 5 * DAY - i * MINUTE);
    const { before, batches } = await walkWindowWhileWriting(srv, tenant, seeded, make, [windowStart, windowEnd]);
    expect(before.length).toBeGreaterThan(300);
    expect(batches, "writes ran during the read").toBeGreaterThan(2);
  });

  // A window in name order is read by week up to NAME_WEEK_ARMS weeks, else by the name index
  // with the event date checked on its entries (docs/architecture.md).
  it.each([
    ["of three weeks, read by week", -20 * DAY, HOUR, 25, 200, "weeks"],
    ["over all history, read by the name index", -400 * DAY, DAY, 25, 600, "name-index"],
    ["of months that hold few of the records, read by the name index", -200 * DAY, -100 * DAY, 3, 12, "name-index"],
  ] as const)(
    "returns every record of a window in name order %s committed before the read exactly once, in name order",
    async (_label, from, to, limit, least, plan) => {
      const srv = server();
      const tenant = await newTenant(srv);
      const now = Date.now();
      const [windowStart, windowEnd] = [now + from, now + to];
      // Names in and out of the prefix, whose code-point order is not JavaScript's; events on time,
      // late by days and by months, and far back.
      const names = ["Ana", "ana \u{1D49C}", "ana \uFFFD", "Anabela", "Bruno", "Ananias"];
      // One record in 50 falls in the months' window: few enough that the name index's first
      // entries hold too few of them.
      const eventAt = (i: number) =>
        i % 50 === 0 ? now - 150 * DAY - i * MINUTE : [now - 5 * MINUTE, now - 12 * DAY - i * MINUTE, now - 300 * DAY][i % 3]!;
      const make = (i: number) => withdrawal({ employeeName: names[i % names.length], deliveredAt: new Date(eventAt(i)).toISOString() });
      // And one from a device whose clock was reset, decades back.
      const reset = withdrawal({ employeeName: "Ana", deliveredAt: "1970-01-01T00:00:00.000Z" });
      const seeded = [...Array.from({ length: 1000 }, (_, i) => make(i)), reset];
      for (let i = 0; i < seeded.length; i += 250) await sync(srv, tenant, "withdrawals", seeded.slice(i, i + 250));

      const writer = startWriter(srv, tenant, make);
      await whenBatches(writer, 2);
      const matches = (r: Record<string, unknown>) => {
        const at = Date.parse(r.deliveredAt as string);
        return at >= windowStart && at <= windowEnd && sortKey(r.employeeName as string).startsWith("an");
      };
      const before = [...seeded, ...writer.acknowledged].filter(matches).map((r) => r.id as string);
      const window = `name=an&createdSince=${new Date(windowStart).toISOString()}&createdUntil=${new Date(windowEnd).toISOString()}`;
      const read = await pageThrough(srv, tenant.keys.read, `/v1/withdrawals?${window}`, limit);
      await writer.stop();
      // A bounded window's plan is made by its query alone: its cursors carry no span.
      expect(planOf({ since: windowStart, until: windowEnd }, "name", undefined).kind).toBe(plan);
      expect(read.plans.every((p) => p === undefined)).toBe(true);

      expectWindowRead(read.ids, before, [...seeded, ...writer.acknowledged], matches);
      for (let i = 1; i < read.names.length; i += 1) {
        const [a, b] = [read.names[i - 1]!, read.names[i]!];
        expect(
          compareCodePoints(a[0], b[0]) || compareCodePoints(a[1], b[1]),
          `${JSON.stringify(a)} before ${JSON.stringify(b)}`,
        ).toBeLessThan(0);
      }
      expect(before.length).toBeGreaterThan(least);
      expect(writer.batches(), "writes ran during the read").toBeGreaterThan(2);
    },
  );
});

/** Code-point order, as the database orders names and ids (JavaScript's `<` compares UTF-16 code units). */
function compareCodePoints(a: string, b: string): number {
  const [x, y] = [Array.from(a), Array.from(b)];
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}
