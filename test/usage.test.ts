/**
 * Usage reports, GET /v1/usage (README, "Usage reports"): withdrawals, returns and exchanges
 * counted per period of a time zone and per group, with names; paged like every list; strict.
 */
import { describe, expect, it } from "vitest";
import { setTenantZone } from "../src/usage/usage.repository.js";
import { costCenter, exchange, returnRecord, withdrawal } from "./support/factories.js";
import { get, newTenant, request, sync, useServer, type TestTenant } from "./support/harness.js";

const server = useServer();

const usage = (tenant: TestTenant, query: string) => get(server(), `/v1/usage?${query}`, tenant.keys.read);
const YEAR_2026 = "createdSince=2026-01-01T00:00:00Z&createdUntil=2026-12-31T23:59:59.999Z";

async function walk(tenant: TestTenant, query: string, limit: number): Promise<any[]> {
  const rows: any[] = [];
  let cursor: string | null = null;
  do {
    const reply = await usage(tenant, `${query}&limit=${limit}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`);
    expect(reply.status).toBe(200);
    expect(reply.body.data.length).toBeLessThanOrEqual(limit);
    rows.push(...reply.body.data);
    cursor = reply.body.cursor;
  } while (cursor !== null);
  return rows;
}

describe("GET /v1/usage", () => {
  it("counts each kind and sums its quantities per period and group, with names, in period then group order", async () => {
    const tenant = await newTenant(server());
    await sync(server(), tenant, "cost-centers", [costCenter({ id: "cc-a", name: "Assembly" })]);
    await sync(server(), tenant, "withdrawals", [
      withdrawal({ costCenterId: "cc-a", quantity: 3, deliveredAt: "2026-11-02T08:00:00Z" }),
      withdrawal({ costCenterId: "cc-a", quantity: 2, deliveredAt: "2026-11-02T09:00:00Z" }),
      withdrawal({ costCenterId: "cc-b", quantity: 5, deliveredAt: "2026-11-02T10:00:00Z" }),
      withdrawal({ costCenterId: "cc-a", quantity: 7, deliveredAt: "2026-11-03T10:00:00Z" }),
    ]);
    await sync(server(), tenant, "returns", [returnRecord({ costCenterId: "cc-a", quantity: 1, deliveredAt: "2026-11-02T12:00:00Z" })]);
    await sync(server(), tenant, "exchanges", [exchange({ costCenterId: "cc-b", quantity: 4, deliveredAt: "2026-11-02T13:00:00Z" })]);

    const reply = await usage(tenant, `groupBy=costCenterId&interval=day&${YEAR_2026}`);
    expect(reply.status).toBe(200);
    expect(reply.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(reply.body).toEqual({
      data: [
        {
          period: "2026-11-02T00:00:00+00:00",
          costCenterId: "cc-a",
          costCenterName: "Assembly",
          withdrawals: { count: 2, quantity: 5 },
          returns: { count: 1, quantity: 1 },
          exchanges: { count: 0, quantity: 0 },
          netQuantity: 4,
        },
        {
          period: "2026-11-02T00:00:00+00:00",
          costCenterId: "cc-b",
          costCenterName: null,
          withdrawals: { count: 1, quantity: 5 },
          returns: { count: 0, quantity: 0 },
          exchanges: { count: 1, quantity: 4 },
          netQuantity: 5,
        },
        {
          period: "2026-11-03T00:00:00+00:00",
          costCenterId: "cc-a",
          costCenterName: "Assembly",
          withdrawals: { count: 1, quantity: 7 },
          returns: { count: 0, quantity: 0 },
          exchanges: { count: 0, quantity: 0 },
          netQuantity: 7,
        },
      ],
      cursor: null,
    });

    // Without an interval, the window is one period, which starts at createdSince, written in the zone.
    const shifted = await usage(
      tenant,
      "groupBy=costCenterId&timeZone=US/Eastern&createdSince=2026-11-02T09:00:00.250Z&createdUntil=2026-11-30T00:00:00Z",
    );
    expect(shifted.body.data.map((r: any) => [r.period, r.costCenterId, r.withdrawals.count])).toEqual([
      ["2026-11-02T04:00:00.250-05:00", "cc-a", 1],
      ["2026-11-02T04:00:00.250-05:00", "cc-b", 1],
    ]);
    const total = await usage(tenant, `groupBy=costCenterId&${YEAR_2026}`);
    expect(total.body.data.map((r: any) => [r.period, r.costCenterId, r.withdrawals.quantity, r.netQuantity])).toEqual([
      ["2026-01-01T00:00:00+00:00", "cc-a", 12, 11],
      ["2026-01-01T00:00:00+00:00", "cc-b", 5, 5],
    ]);
  });

  it("groups by two fields, takes an employee's name from its latest stored transaction, and filters by id", async () => {
    const tenant = await newTenant(server());
    await sync(server(), tenant, "withdrawals", [
      withdrawal({ employeeId: "e1", employeeName: "Ana", productId: "p1", productName: "Gloves", deliveredAt: "2026-11-02T08:00:00Z" }),
      withdrawal({ employeeId: "e1", employeeName: "Ana", productId: "p2", productName: "Mask", deliveredAt: "2026-11-05T08:00:00Z" }),
    ]);
    // Stored later, dated earlier: its name is the latest stored.
    await sync(server(), tenant, "returns", [
      returnRecord({
        employeeId: "e1",
        employeeName: "Ana Maria",
        productId: "p1",
        productName: "Gloves",
        deliveredAt: "2026-10-01T08:00:00Z",
      }),
    ]);
    const reply = await usage(tenant, `groupBy=employeeId,productId&interval=month&${YEAR_2026}`);
    expect(reply.body.data.map((r: any) => [r.period, r.employeeId, r.employeeName, r.productId, r.productName, r.netQuantity])).toEqual([
      ["2026-10-01T00:00:00+00:00", "e1", "Ana Maria", "p1", "Gloves", -1],
      ["2026-11-01T00:00:00+00:00", "e1", "Ana Maria", "p1", "Gloves", 1],
      ["2026-11-01T00:00:00+00:00", "e1", "Ana Maria", "p2", "Mask", 1],
    ]);
    const one = await usage(tenant, `groupBy=employeeId&interval=month&productId=p2&${YEAR_2026}`);
    expect(one.body.data.map((r: any) => [r.period, r.employeeId, r.withdrawals.count])).toEqual([["2026-11-01T00:00:00+00:00", "e1", 1]]);
  });

  it("counts in the zone's calendar: daylight-saving days, :45 offsets, ISO weeks from Monday", async () => {
    const tenant = await newTenant(server());
    await sync(server(), tenant, "withdrawals", [
      // Berlin moves to summer time on 2026-03-29: that day has 23 hours.
      withdrawal({ deliveredAt: "2026-03-28T23:30:00Z" }),
      withdrawal({ deliveredAt: "2026-03-29T21:59:00Z" }),
      withdrawal({ deliveredAt: "2026-03-29T22:00:00Z" }),
      // Kathmandu is UTC+05:45.
      withdrawal({ deliveredAt: "2026-06-07T18:14:59Z" }),
      withdrawal({ deliveredAt: "2026-06-07T18:15:00Z" }),
    ]);
    const berlin = await usage(
      tenant,
      `groupBy=sectorId&interval=day&timeZone=Europe/Berlin&createdSince=2026-03-28T00:00:00Z&createdUntil=2026-03-31T00:00:00Z`,
    );
    expect(berlin.body.data.map((r: any) => [r.period, r.withdrawals.count])).toEqual([
      ["2026-03-29T00:00:00+01:00", 2],
      ["2026-03-30T00:00:00+02:00", 1],
    ]);
    const kathmandu = await usage(
      tenant,
      `groupBy=sectorId&interval=week&timeZone=Asia/Kathmandu&createdSince=2026-06-01T00:00:00Z&createdUntil=2026-06-30T00:00:00Z`,
    );
    // 2026-06-07 is a Sunday: its last quarter of an hour in Kathmandu is already Monday.
    expect(kathmandu.body.data.map((r: any) => [r.period, r.withdrawals.count])).toEqual([
      ["2026-06-01T00:00:00+05:45", 1],
      ["2026-06-08T00:00:00+05:45", 1],
    ]);
  });

  it("counts in the tenant's own zone by default, a late record in its event's period, and months alike from totals and records", async () => {
    const tenant = await newTenant(server());
    await sync(server(), tenant, "withdrawals", [withdrawal({ quantity: 2, deliveredAt: "2026-01-31T23:30:00Z" })]);
    await setTenantZone(server().storage.db, tenant.id, "America/Sao_Paulo");
    // Synced now, dated last year's December in Sao Paulo (UTC-3).
    await sync(server(), tenant, "withdrawals", [withdrawal({ quantity: 5, deliveredAt: "2026-01-01T01:00:00Z" })]);
    const window = "createdSince=2025-12-01T00:00:00-03:00&createdUntil=2026-02-28T23:59:59.999-03:00";
    const months = await usage(tenant, `groupBy=costCenterId&interval=month&${window}`);
    expect(months.body.data.map((r: any) => [r.period, r.withdrawals.quantity])).toEqual([
      ["2025-12-01T00:00:00-03:00", 5],
      ["2026-01-01T00:00:00-03:00", 2],
    ]);
    // Filtered by another field, the same months come from the records.
    const fromRecords = await usage(tenant, `groupBy=costCenterId&interval=month&productId=prd-1&${window}`);
    expect(fromRecords.body.data).toEqual(months.body.data);
    const utc = await usage(tenant, `groupBy=costCenterId&interval=month&timeZone=UTC&${window}`);
    expect(utc.body.data.map((r: any) => [r.period, r.withdrawals.quantity])).toEqual([["2026-01-01T00:00:00+00:00", 7]]);
  });

  it("pages through a report with cursors bound to its parameters", async () => {
    const tenant = await newTenant(server());
    const records = Array.from({ length: 40 }, (_, i) =>
      withdrawal({ employeeId: `e${i % 7}`, deliveredAt: new Date(Date.UTC(2026, 10, 1 + (i % 9), 8)).toISOString() }),
    );
    await sync(server(), tenant, "withdrawals", records);
    const query = `groupBy=employeeId&interval=day&${YEAR_2026}`;
    const whole = (await usage(tenant, `${query}&limit=100`)).body.data;
    expect(whole.reduce((n: number, r: any) => n + r.withdrawals.count, 0)).toBe(40);
    for (const limit of [1, 3, 10]) expect(await walk(tenant, query, limit)).toEqual(whole);
    const first = await usage(tenant, `${query}&limit=2`);
    const elsewhere = await usage(tenant, `groupBy=employeeId&interval=week&${YEAR_2026}&cursor=${encodeURIComponent(first.body.cursor)}`);
    expect(elsewhere.status).toBe(400);
    expect(elsewhere.body.code).toBe("invalid_cursor");
  });

  it("answers 405 to other methods, with Allow, and HEAD as GET", async () => {
    const tenant = await newTenant(server());
    for (const method of ["POST", "PUT", "PATCH", "DELETE"]) {
      const reply = await request(server(), method, "/v1/usage", { key: tenant.keys.all, body: {} });
      expect([reply.status, reply.headers.get("allow"), reply.body.code], method).toEqual([405, "GET, HEAD", "method_not_allowed"]);
    }
    const head = await request(server(), "HEAD", `/v1/usage?groupBy=costCenterId&${YEAR_2026}`, { key: tenant.keys.read });
    expect(head.status).toBe(200);
  });

  it("refuses another tenant's cursor", async () => {
    const [one, two] = [await newTenant(server()), await newTenant(server())];
    for (const tenant of [one, two]) {
      await sync(server(), tenant, "withdrawals", [withdrawal({ costCenterId: "a" }), withdrawal({ costCenterId: "b" })]);
    }
    const first = await usage(one, `groupBy=costCenterId&limit=1&${YEAR_2026}`);
    const stolen = await usage(two, `groupBy=costCenterId&limit=1&${YEAR_2026}&cursor=${encodeURIComponent(first.body.cursor)}`);
    expect([stolen.status, stolen.body.code]).toEqual([400, "invalid_cursor"]);
  });

  it.each([
    ["createdSince=2026-01-01T00:00:00Z&createdUntil=2026-02-01T00:00:00Z", "missing_parameter", "groupBy"],
    ["groupBy=costCenterId&createdUntil=2026-02-01T00:00:00Z", "missing_parameter", "createdSince"],
    ["groupBy=costCenterId&createdSince=2026-01-01T00:00:00Z", "missing_parameter", "createdUntil"],
    [`groupBy=name&${YEAR_2026}`, "invalid_parameter", "groupBy"],
    [`groupBy=costCenterId,costCenterId&${YEAR_2026}`, "invalid_parameter", "groupBy"],
    [`groupBy=costCenterId,productId,sectorId&${YEAR_2026}`, "invalid_parameter", "groupBy"],
    [`groupBy=costCenterId&interval=year&${YEAR_2026}`, "invalid_parameter", "interval"],
    [`groupBy=costCenterId&timeZone=Mars/Olympus&${YEAR_2026}`, "invalid_parameter", "timeZone"],
    [`groupBy=costCenterId&timeZone=europe/berlin&${YEAR_2026}`, "invalid_parameter", "timeZone"],
    [`groupBy=costCenterId&timeZone=us/eastern&${YEAR_2026}`, "invalid_parameter", "timeZone"],
    [`groupBy=costCenterId&timeZone=%2B01:00&${YEAR_2026}`, "invalid_parameter", "timeZone"],
    [`groupBy=costCenterId&costCenterId=a%20b&${YEAR_2026}`, "invalid_parameter", "costCenterId"],
    ["groupBy=costCenterId&createdSince=2026-01-01&createdUntil=2026-02-01T00:00:00Z", "invalid_time", "createdSince"],
    ["groupBy=costCenterId&createdSince=2026-02-01T00:00:00Z&createdUntil=2026-01-01T00:00:00Z", "invalid_time_window", "createdSince"],
    [
      "groupBy=costCenterId&interval=day&createdSince=2020-01-01T00:00:00Z&createdUntil=2026-01-01T00:00:00Z",
      "invalid_time_window",
      "createdUntil",
    ],
    ["groupBy=costCenterId&createdSince=1900-01-01T00:00:00Z&createdUntil=2026-01-01T00:00:00Z", "invalid_time_window", "createdUntil"],
    [`groupBy=costCenterId&name=a&${YEAR_2026}`, "unknown_parameter", "name"],
    [`groupBy=costCenterId&limit=101&${YEAR_2026}`, "invalid_limit", "limit"],
  ])("refuses %s with %s", async (query, code, param) => {
    const tenant = await newTenant(server());
    const reply = await usage(tenant, query);
    expect(reply.status).toBe(400);
    expect(reply.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect([reply.body.code, reply.body.param]).toEqual([code, param]);
    expect(reply.body.detail).toEqual(expect.any(String));
  });
});
