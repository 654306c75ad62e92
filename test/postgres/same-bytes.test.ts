/**
 * The same API byte for byte on both engines: one server on SQLite and one on PostgreSQL,
 * with the same clock and cursor secret, receive the same syncs; every page, cursor and error
 * they answer must be the same bytes (order of accented, mixed-case and non-Latin names,
 * createdAt ties, windows with late records, relationship filters, refusals).
 */
import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { FastifyInstance } from "fastify";
import { buildApp } from "../../src/app.js";
import { loadConfig } from "../../src/platform/config.js";
import { CursorCodec } from "../../src/platform/cursor.js";
import { openStorage, type Storage } from "../../src/storage/database.js";
import { migrateToLatest } from "../../src/storage/migrate.js";
import { createTenant, issueKey } from "../../src/tenants/tenant.service.js";
import { FACTORIES } from "../support/factories.js";
import { createTestDatabase, POSTGRES_URL, type TestDatabase } from "../support/databases.js";

interface Side {
  url: string;
  key: string;
  app: FastifyInstance;
  storage: Storage;
  database: TestDatabase;
}

const secret = randomBytes(24).toString("hex");
const clock = { now: Date.UTC(2026, 10, 20, 12) };
const sides: Side[] = [];

async function open(kind: "sqlite" | "postgres"): Promise<Side> {
  const database = await createTestDatabase();
  const url = kind === "postgres" ? database.url : `sqlite:${database.dir}/same.db`;
  const config = loadConfig({ DATABASE_URL: url, CRIBLINE_CURSOR_SECRET: secret, LOG_LEVEL: "silent" });
  const storage = await openStorage(config.database);
  await migrateToLatest(storage);
  await createTenant(storage.db, "same");
  const { key } = await issueKey(storage.db, "same", ["read", "sync"]);
  const app = await buildApp({ config, storage, cursors: new CursorCodec(secret), clock: () => clock.now });
  return { url: await app.listen({ port: 0, host: "127.0.0.1" }), key, app, storage, database };
}

beforeAll(async () => {
  expect(POSTGRES_URL).toBeDefined();
  sides.push(await open("sqlite"), await open("postgres"));
});
afterAll(async () => {
  for (const side of sides) {
    await side.app.close();
    await side.storage.close();
    await side.database.drop();
  }
});

/** Sends the same request to both servers; returns both answers as status and raw text. */
async function both(method: string, path: string, body?: unknown): Promise<[string, string]> {
  const answers = await Promise.all(
    sides.map(async (side) => {
      const response = await fetch(`${side.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${side.key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return `${response.status} ${response.headers.get("content-type")}\n${await response.text()}`;
    }),
  );
  return answers as [string, string];
}

const NAMES = [
  "Ábaco",
  "abacate",
  "ABADE",
  "Ωmega",
  "ωmega",
  "Σίσυφος",
  "σίσυφος",
  "Zoë",
  "zoe",
  "Ærø",
  "ǅemal",
  "李小龙",
  "😀 smile",
  "a b",
  "a",
  "",
];
const MINUTE = 60_000;

describe("SQLite and PostgreSQL", () => {
  it("answer the same syncs, pages, cursors and errors with the same bytes", { timeout: 60_000 }, async () => {
    const syncs: [string, unknown][] = [];
    // Master data with awkward names; several batches share a createdAt (the clock stands still).
    syncs.push([
      "employees",
      { data: NAMES.filter(Boolean).map((name, i) => FACTORIES.employees!({ id: `e-${i}`, name, sectorId: `s-${i % 3}` })) },
    ]);
    syncs.push([
      "cost-centers",
      { data: NAMES.filter(Boolean).map((name, i) => FACTORIES["cost-centers"]!({ id: `c-${i}`, name, code: name.toUpperCase() })) },
    ]);
    for (let batch = 0; batch < 4; batch += 1) {
      syncs.push([
        "withdrawals",
        {
          data: Array.from({ length: 30 }, (_, i) => {
            const n = batch * 30 + i;
            // On time, late (days after the event), and ahead of the event.
            const eventAt = clock.now + [-5 * MINUTE, -3 * 24 * 60 * MINUTE, 2 * 60 * MINUTE][n % 3]! - batch * 7 * MINUTE;
            return FACTORIES.withdrawals!({
              id: `w-${String(n).padStart(3, "0")}`,
              employeeId: `e-${n % 5}`,
              employeeName: NAMES[n % NAMES.length] || "x",
              deliveredAt: new Date(eventAt).toISOString(),
            });
          }),
        },
      ]);
    }
    syncs.push(["withdrawals", { data: [FACTORIES.withdrawals!({ id: "w-000", quantity: 99 })] }]); // 409
    syncs.push(["employees", { data: [FACTORIES.employees!({ id: "e-1", name: "Renamed" })] }]); // update
    syncs.push(["withdrawals", { data: [{ id: "bad" }] }]); // 400
    for (const [collection, body] of syncs) {
      const [a, b] = await both("POST", `/v1/sync/${collection}`, body);
      expect(b, `sync ${collection}`).toBe(a);
      clock.now += 1; // most batches a millisecond apart, some with the same createdAt
      if (collection === "employees") clock.now -= 1;
    }

    const since = new Date(clock.now - 4 * 24 * 60 * MINUTE).toISOString();
    const until = new Date(clock.now - 60 * MINUTE).toISOString();
    const queries = [
      "/v1/withdrawals?limit=7",
      `/v1/withdrawals?limit=9&createdSince=${since}&createdUntil=${until}`,
      `/v1/withdrawals?limit=11&createdSince=${since}`,
      `/v1/withdrawals?limit=8&createdUntil=${until}`,
      "/v1/withdrawals?limit=6&name=%C3%A1",
      "/v1/withdrawals?limit=5&employeeId=e-3",
      "/v1/employees?limit=4",
      "/v1/employees?limit=3&name=%CF%83",
      "/v1/employees?limit=3&name=a",
      "/v1/employees?limit=5&sectorId=s-1",
      "/v1/cost-centers?limit=4&code=%C3%81",
      "/v1/cost-centers?limit=2&name=z",
    ];
    for (const query of queries) {
      let path: string | null = query;
      for (let page = 0; path !== null; page += 1) {
        const [a, b] = await both("GET", path);
        expect(b, `${query} page ${page}`).toBe(a);
        const cursor = JSON.parse(a.slice(a.indexOf("\n") + 1)).cursor as string | null;
        path = cursor === null ? null : `${query}&cursor=${encodeURIComponent(cursor)}`;
      }
    }
    for (const bad of [
      "/v1/withdrawals?limit=0",
      "/v1/withdrawals?foo=1",
      "/v1/withdrawals?cursor=abc",
      `/v1/withdrawals?createdSince=${until}&createdUntil=${since}`,
    ]) {
      const [a, b] = await both("GET", bad);
      expect(b, bad).toBe(a);
    }
  });
});
