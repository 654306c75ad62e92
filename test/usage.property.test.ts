/**
 * Usage reports are exact: for random withdrawals, returns and exchanges, zones, windows,
 * intervals, groups and filters, every row of a report (all its pages) is what the transaction
 * lists return for the same window, put in periods by the zone's calendar as Intl tells it; and
 * a report read while batches are synced counts each batch whole or not at all.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { setTenantZone } from "../src/usage/usage.repository.js";
import { exchange, returnRecord, withdrawal } from "./support/factories.js";
import { get, newTenant, readAll, sync, useServer, type TestTenant } from "./support/harness.js";

const server = useServer();
const DAY = 86_400_000;
const ZONES = [
  "UTC",
  "Europe/Berlin",
  "America/St_Johns",
  "Asia/Kathmandu",
  "Australia/Lord_Howe",
  "Pacific/Chatham",
  "America/Los_Angeles",
];
const FIELDS = ["costCenterId", "employeeId", "productId", "sectorId", "deviceId"];
const KINDS = ["withdrawals", "returns", "exchanges"] as const;
const FACTORY = { withdrawals: withdrawal, returns: returnRecord, exchanges: exchange };
const START = Date.parse("2026-01-20T00:00:00Z");
const SPAN = 120 * DAY;

/** The local calendar date of an instant in the zone, by Intl: `YYYY-MM-DD`. */
const localDate = (zone: string, t: number) =>
  new Intl.DateTimeFormat("en-CA", { timeZone: zone, year: "numeric", month: "2-digit", day: "2-digit" }).format(t);

function periodKey(zone: string, interval: string, t: number): string {
  const date = localDate(zone, t);
  if (interval === "day") return date;
  if (interval === "month") return date.slice(0, 7);
  if (interval === "total") return "";
  const day = Date.parse(`${date}T00:00:00Z`);
  return new Date(day - ((new Date(day).getUTCDay() + 6) % 7) * DAY).toISOString().slice(0, 10);
}

const keyOfLabel = (interval: string, label: string) => (interval === "total" ? "" : label.slice(0, interval === "month" ? 7 : 10));

/** The instant a local midnight of `date` falls on in the zone (none of these zones skips midnight). */
function localMidnight(zone: string, date: string): number {
  const offsetAt = (t: number) => {
    const name = new Intl.DateTimeFormat("en-US", { timeZone: zone, timeZoneName: "longOffset" })
      .formatToParts(t)
      .find((p) => p.type === "timeZoneName")!.value;
    const m = /GMT(?:([+-])(\d\d):(\d\d))?/.exec(name)!;
    return m[1] === undefined ? 0 : (m[1] === "-" ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) * 60_000;
  };
  const local = Date.parse(`${date}T00:00:00Z`);
  return local - offsetAt(local - offsetAt(local));
}

async function seed(tenant: TestTenant, seedValue: number): Promise<void> {
  const records = fc.sample(
    fc.record({
      kind: fc.constantFrom(...KINDS),
      at: fc.integer({ min: START, max: START + SPAN }),
      ids: fc.tuple(...FIELDS.map(() => fc.integer({ min: 1, max: 4 }))),
      quantity: fc.integer({ min: 1, max: 9 }),
    }),
    { numRuns: 400, seed: seedValue },
  );
  for (const kind of KINDS) {
    const data = records
      .filter((r) => r.kind === kind)
      .map((r) =>
        FACTORY[kind]({
          ...Object.fromEntries(FIELDS.map((f, i) => [f, `${f.slice(0, 2)}-${r.ids[i]}`])),
          quantity: r.quantity,
          deliveredAt: new Date(r.at).toISOString(),
        }),
      );
    for (let i = 0; i < data.length; i += 100) await sync(server(), tenant, kind, data.slice(i, i + 100));
  }
}

interface Query {
  zone: string | undefined;
  interval: string;
  groupBy: string[];
  filter: [string, string] | undefined;
  since: number;
  until: number;
}

async function expected(tenant: TestTenant, q: Query, zone: string): Promise<Map<string, number[]>> {
  const window = `createdSince=${new Date(q.since).toISOString()}&createdUntil=${new Date(q.until).toISOString()}`;
  const rows = new Map<string, number[]>();
  for (const [k, kind] of KINDS.entries()) {
    const { items } = await readAll(server(), tenant.keys.read, `/v1/${kind}?${window}`);
    for (const item of items) {
      if (q.filter !== undefined && item[q.filter[0]] !== q.filter[1]) continue;
      const key = [periodKey(zone, q.interval, Date.parse(item.deliveredAt)), ...q.groupBy.map((f) => item[f])].join("|");
      const counts = rows.get(key) ?? [0, 0, 0, 0, 0, 0];
      counts[k * 2]! += 1;
      counts[k * 2 + 1]! += item.quantity;
      rows.set(key, counts);
    }
  }
  return rows;
}

const query = fc.record({
  // The tenant's own zone most often: whole months of it are read from their totals.
  zone: fc.oneof({ arbitrary: fc.constant(undefined), weight: 3 }, { arbitrary: fc.constantFrom(...ZONES), weight: 2 }),
  interval: fc.constantFrom("day", "week", "month", "total"),
  groupBy: fc.oneof(
    { arbitrary: fc.constantFrom(...FIELDS).map((f) => [f]), weight: 2 },
    { arbitrary: fc.shuffledSubarray(FIELDS, { minLength: 2, maxLength: 2 }), weight: 1 },
  ),
  filter: fc.option(fc.tuple(fc.constantFrom(...FIELDS), fc.integer({ min: 1, max: 4 })), { nil: undefined, freq: 2 }),
  // Either instants anywhere in the data, or local month starts (whole months read from their totals).
  window: fc.oneof(
    fc
      .tuple(fc.integer({ min: START - 5 * DAY, max: START + SPAN }), fc.integer({ min: 0, max: SPAN }))
      .map(([a, w]) => ({ at: a, width: w, months: false })),
    fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 1, max: 4 })).map(([a, w]) => ({ at: a, width: w, months: true })),
  ),
  limit: fc.constantFrom(7, 100),
});

/** Reports that read whole months of the tenant's zone from their totals: one group, filtered by it alone. */
const byTotalsQuery = fc
  .record({
    interval: fc.constantFrom("month", "total"),
    field: fc.constantFrom(...FIELDS),
    filtered: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
    window: query.map((q) => q.window),
    limit: fc.constantFrom(3, 100),
    zone: fc.option(fc.constantFrom(...ZONES), { nil: undefined }),
  })
  .map(({ interval, field, filtered, window, limit, zone }) => ({
    // In total, any zone: which months are whole in the window does not depend on it.
    zone: interval === "total" ? zone : undefined,
    interval,
    groupBy: [field],
    filter: filtered === undefined ? undefined : ([field, filtered] as [string, number]),
    window,
    limit,
  }));

describe("GET /v1/usage, exactly", () => {
  it("equals the transaction lists for random data, zones, windows, intervals, groups and filters", async () => {
    for (const [n, ownZone] of [ZONES[1]!, ZONES[3]!].entries()) {
      const tenant = await newTenant(server());
      // Half the records synced before the zone is set: its months are counted again in it.
      await seed(tenant, 10 + n);
      await setTenantZone(server().storage.db, tenant.id, ownZone);
      await seed(tenant, 20 + n);
      let byTotals = 0;
      await fc.assert(
        fc.asyncProperty(fc.oneof(query, byTotalsQuery), async (p) => {
          const zone = p.zone ?? ownZone;
          const month = (i: number) => localMidnight(zone, `2026-${String(1 + i).padStart(2, "0")}-01`);
          const [since, until] = p.window.months
            ? [month(p.window.at), month(p.window.at + p.window.width) - 1]
            : [p.window.at, p.window.at + p.window.width];
          const filter: [string, string] | undefined =
            p.filter === undefined ? undefined : [p.filter[0], `${p.filter[0].slice(0, 2)}-${p.filter[1]}`];
          const q: Query = { zone: p.zone, interval: p.interval, groupBy: p.groupBy, filter, since, until };
          const params = [
            `groupBy=${q.groupBy.join(",")}`,
            `interval=${q.interval}`,
            `createdSince=${new Date(since).toISOString()}`,
            `createdUntil=${new Date(until).toISOString()}`,
            ...(q.zone === undefined ? [] : [`timeZone=${q.zone}`]),
            ...(filter === undefined ? [] : [`${filter[0]}=${filter[1]}`]),
          ];
          const { items } = await readAll(server(), tenant.keys.read, `/v1/usage?${params.join("&")}`, [p.limit]);
          const got = new Map(
            items.map((r: any) => [
              [keyOfLabel(q.interval, r.period), ...q.groupBy.map((f) => r[f])].join("|"),
              [r.withdrawals.count, r.withdrawals.quantity, r.returns.count, r.returns.quantity, r.exchanges.count, r.exchanges.quantity],
            ]),
          );
          expect(got.size).toBe(items.length);
          expect(Object.fromEntries(got)).toEqual(Object.fromEntries(await expected(tenant, q, zone)));
          const order = items.map((r: any) => [Date.parse(r.period), ...q.groupBy.map((f) => r[f])]);
          const sorted = [...order].sort(
            (a, b) => a[0] - b[0] || (a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : a[2] < b[2] ? -1 : a[2] > b[2] ? 1 : 0),
          );
          expect(order).toEqual(sorted);
          for (const r of items) expect(r.netQuantity).toBe(r.withdrawals.quantity - r.returns.quantity);
          const fromTotals = (q.interval === "total" || (q.interval === "month" && zone === ownZone)) && q.groupBy.length === 1;
          if (fromTotals && (filter === undefined || filter[0] === q.groupBy[0]) && items.length > 0) byTotals += 1;
        }),
        { numRuns: 60, seed: 52 + n },
      );
      // The runs that read whole months from their totals, which the records must agree with.
      expect(byTotals).toBeGreaterThan(10);
    }
  }, 240_000);

  it("counts a batch synced during a report whole or not at all", async () => {
    const tenant = await newTenant(server());
    const batch = (b: number) =>
      Array.from({ length: 50 }, (_, i) => withdrawal({ id: `b${b}-${i}`, deliveredAt: new Date(START + (i % 12) * DAY).toISOString() }));
    const path = `/v1/usage?groupBy=sectorId&interval=day&limit=100&createdSince=${new Date(START).toISOString()}&createdUntil=${new Date(START + SPAN).toISOString()}`;
    let syncing = true;
    const writer = (async () => {
      for (let b = 0; b < 30; b += 1) await sync(server(), tenant, "withdrawals", batch(b));
      syncing = false;
    })();
    const seen: number[] = [];
    while (syncing) {
      const reply = await get(server(), path, tenant.keys.read);
      seen.push(reply.body.data.reduce((n: number, r: any) => n + r.withdrawals.count, 0));
    }
    await writer;
    expect(seen.every((n) => n % 50 === 0)).toBe(true);
    const last = await get(server(), path, tenant.keys.read);
    expect(last.body.data.reduce((n: number, r: any) => n + r.withdrawals.count, 0)).toBe(1500);
  });
});
