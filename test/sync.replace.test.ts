/**
 * Master data sync replaces the whole record (README: "What a client must know", Sync): a sync
 * sends the source's state, so an optional field left out of a record sent again becomes null,
 * and that is a change: `updatedAt` moves. Over HTTP, for every master-data list with an
 * optional field (an employee's `registration`, a product's `sku`, a device's `location`).
 */
import { describe, expect, it } from "vitest";
import { COLLECTIONS } from "../src/collections/registry.js";
import { FACTORIES } from "./support/factories.js";
import { newTenant, readAll, request, useServer, type TestTenant } from "./support/harness.js";

const server = useServer();
const T1 = Date.parse("2026-11-22T10:00:00.000Z");
const T2 = T1 + 60_000;

const WITH_OPTIONAL = COLLECTIONS.filter((c) => c.kind === "master" && c.optional.length > 0);

async function syncAt(at: number, tenant: TestTenant, name: string, record: Record<string, unknown>) {
  server().clock.now = at;
  const reply = await request(server(), "POST", `/v1/sync/${name}`, { key: tenant.keys.sync, body: { data: [record] } });
  expect(reply.status, JSON.stringify(reply.body)).toBe(200);
  return reply.body;
}

it("has master data with optional fields to show it on, employees among them", () => {
  expect(WITH_OPTIONAL.map((c) => c.name)).toContain("employees");
});

describe.each(WITH_OPTIONAL.map((c) => [c.name, c.optional] as const))("re-syncing %s", (name, optional) => {
  it(`without ${optional.join(", ")} stores null there and moves updatedAt, createdAt kept`, async () => {
    const tenant = await newTenant(server());
    const full = FACTORIES[name]!();
    for (const field of optional) expect(full[field], field).toEqual(expect.any(String));
    expect(await syncAt(T1, tenant, name, full)).toEqual({ created: 1, updated: 0, unchanged: 0 });

    const without = Object.fromEntries(Object.entries(full).filter(([field]) => !optional.includes(field)));
    expect(await syncAt(T2, tenant, name, without)).toEqual({ created: 0, updated: 1, unchanged: 0 });
    const { items } = await readAll(server(), tenant.keys.read, `/v1/${name}`);
    expect(items).toEqual([
      {
        ...full,
        ...Object.fromEntries(optional.map((field) => [field, null])),
        createdAt: new Date(T1).toISOString(),
        updatedAt: new Date(T2).toISOString(),
      },
    ]);
  });
});
