/**
 * The client's events (client/src/events.ts) against a real server over HTTP: walked whole and
 * by type as the raw pages have them, one read by its id, a missing one a typed error.
 */
import { describe, expect, it } from "vitest";
import { CriblineClient } from "../client/src/index.js";
import { FACTORIES } from "./support/factories.js";
import { newTenant, readAll, sync, useServer, type TestTenant } from "./support/harness.js";

const server = useServer();
const client = (tenant: TestTenant) => new CriblineClient({ baseUrl: server().url, apiKey: tenant.keys.all });

describe("client.events", () => {
  it("walks the events, filtered by type, and reads one by its id", async () => {
    const tenant = await newTenant(server());
    await sync(
      server(),
      tenant,
      "withdrawals",
      Array.from({ length: 45 }, () => FACTORIES.withdrawals!()),
    );
    await sync(
      server(),
      tenant,
      "employees",
      Array.from({ length: 12 }, () => FACTORIES.employees!()),
    );
    const walked = [];
    for await (const event of client(tenant).events.list({}, { limit: 10 })) walked.push(event);
    expect(walked).toHaveLength(57);
    expect(walked).toEqual((await readAll(server(), tenant.keys.read, "/v1/events", [10])).items);
    const people = [];
    for await (const event of client(tenant).events.list({ type: "employee.created" })) people.push(event);
    expect(people).toEqual(walked.filter((e) => e.type === "employee.created"));
    expect(await client(tenant).events.get(walked[0]!.id)).toEqual(walked[0]);
    const missing = await client(tenant)
      .events.get("msg_nothing")
      .catch((e: unknown) => e);
    expect(missing).toMatchObject({ status: 404, code: "not_found" });
  });
});
