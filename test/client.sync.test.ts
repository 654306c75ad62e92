/**
 * Sync of @cribline/client over more than one batch, against a real server over HTTP: a batch
 * refused part-way says which batches were stored and where each record at fault is in the
 * caller's array; what the client can see of the whole input is refused before any batch is
 * sent, as a 400 (status 0 would read as "no answer", which a caller may retry).
 */
import { describe, expect, it } from "vitest";
import { CriblineError, CriblineClient, SyncError } from "../client/src/index.js";
import { FACTORIES } from "./support/factories.js";
import { newTenant, readAll, sync, useServer, type TestTenant } from "./support/harness.js";

const server = useServer();
const client = (tenant: TestTenant) => new CriblineClient({ baseUrl: server().url, apiKey: tenant.keys.all });

describe("sync of more than one batch", () => {
  const storedIds = async (tenant: TestTenant) =>
    (await readAll(server(), tenant.keys.read, "/v1/withdrawals")).items.map((item) => item.id as string).sort();

  it("says which batches were stored, and where the bad record is in the caller's array, when a later batch is refused", async () => {
    const tenant = await newTenant(server());
    const records = Array.from({ length: 2500 }, () => FACTORIES.withdrawals!());
    records[1500] = { ...records[1500], quantity: 0 };
    const error = await client(tenant)
      .withdrawals.sync(records as never)
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SyncError);
    expect(error).toBeInstanceOf(CriblineError);
    const failure = error as SyncError;
    expect(failure).toMatchObject({ status: 400, code: "invalid_records", failed: { batch: 1, first: 1000, count: 1000 } });
    expect(failure.applied).toEqual({
      created: 1000,
      updated: 0,
      unchanged: 0,
      batches: [{ first: 0, count: 1000, created: 1000, updated: 0, unchanged: 0 }],
    });
    expect(failure.errors).toEqual([{ index: 1500, field: "quantity", message: expect.any(String) }]);
    expect(failure.problem?.errors).toEqual(failure.errors);
    expect(failure.message).toMatch(/^400 invalid_records: batch 1 \(records 1000\.\.1999\) refused, nothing of it stored: /);
    expect(failure.message).toMatch(/stored before it: batch 0 \(records 0\.\.999\); not sent: records 2000\.\.2499/);
    expect(failure.message).not.toMatch(/nothing was applied/);
    expect(await storedIds(tenant)).toEqual(
      records
        .slice(0, 1000)
        .map((r) => r.id as string)
        .sort(),
    );
  });

  it("names the records stored already with other content by their index in the caller's array", async () => {
    const tenant = await newTenant(server());
    const records = Array.from({ length: 1200 }, () => FACTORIES.withdrawals!());
    await sync(server(), tenant, "withdrawals", [{ ...records[1100], quantity: 7 }]);
    const error = (await client(tenant)
      .withdrawals.sync(records as never)
      .catch((e: unknown) => e)) as SyncError;
    expect(error).toMatchObject({ status: 409, code: "conflict", failed: { batch: 1, first: 1000, count: 200 } });
    expect(error.applied.batches.map((b) => [b.first, b.count])).toEqual([[0, 1000]]);
    expect(error.errors).toEqual([{ index: 1100, field: "id", message: expect.stringMatching(/other content/) }]);
  });

  it("refuses, before sending any batch, an id twice in the whole input, an id of the wrong shape, and a record that is no object", async () => {
    const tenant = await newTenant(server());
    const records: unknown[] = Array.from({ length: 2100 }, () => FACTORIES.withdrawals!());
    records[1200] = { ...(records[1200] as object), id: (records[10] as { id: string }).id };
    records[2050] = { ...(records[2050] as object), id: "no spaces allowed" };
    records[2099] = null;
    const error = (await client(tenant)
      .withdrawals.sync(records as never)
      .catch((e: unknown) => e)) as SyncError;
    expect(error).toBeInstanceOf(SyncError);
    // 400 as the server would say it, never 0 ("no answer"), which a caller may retry for ever.
    expect(error).toMatchObject({ status: 400, code: "invalid_records", failed: undefined, applied: { created: 0, batches: [] } });
    expect(error.requestId).toBeUndefined();
    expect(error.problem).toMatchObject({ status: 400, code: "invalid_records", errors: error.errors });
    expect(error.errors).toEqual([
      { index: 1200, field: "id", message: expect.stringMatching(/appears already at index 10/) },
      { index: 2050, field: "id", message: expect.stringMatching(/1 to 64 characters/) },
      { index: 2099, field: "(record)", message: expect.stringMatching(/object/) },
    ]);
    expect(error.message).toBe("400 invalid_records: 3 record(s) refused by the client before sending; nothing was sent");
    expect(await storedIds(tenant)).toEqual([]);
    expect(await client(tenant).withdrawals.sync([])).toEqual({ created: 0, updated: 0, unchanged: 0, batches: [] });
  });
});
