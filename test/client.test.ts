/**
 * @cribline/client (client/) against a real server over HTTP: every list walked with the
 * client equals the raw pages; retries after 503 and 429, a time limit, sync in batches retried
 * safely, and webhooks the server itself signed, verified. Its types come from the OpenAPI
 * document: a test fails when the generated file drifts from it. Sync's failures part-way and
 * its refusals before sending: client.sync.test.ts.
 */
import { createServer, type Server } from "node:http";
import { readFileSync } from "node:fs";
import openapiTS, { astToString } from "openapi-typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  CriblineClient,
  CriblineError,
  LIST_NAMES,
  ListResource,
  verifyWebhook,
  WebhookVerificationError,
  type ListName,
  type Page,
} from "../client/src/index.js";
import { DeliveryLoop } from "../src/webhooks/delivery/delivery.loop.js";
import { FACTORIES } from "./support/factories.js";
import { newTenant, readAll, request, sync, useServer, type TestTenant } from "./support/harness.js";
import { Receiver } from "./support/receiver.js";

const server = useServer({ CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true" });
const client = (tenant: TestTenant, options: { baseUrl?: string; timeoutMs?: number; maxRetries?: number } = {}) =>
  new CriblineClient({ baseUrl: server().url, apiKey: tenant.keys.all, ...options });

describe("the generated types", () => {
  it("are what openapi-typescript makes of the committed OpenAPI document (npm run generate in client/ rewrites them)", async () => {
    const document = JSON.parse(readFileSync(new URL("../openapi.json", import.meta.url), "utf8"));
    const generated = astToString(await openapiTS(document));
    const committed = readFileSync(new URL("../client/src/openapi.ts", import.meta.url), "utf8");
    // The CLI adds its banner; the types are the rest.
    expect(committed.endsWith(generated)).toBe(true);
  });
});

describe("paging", () => {
  const LISTS = [...LIST_NAMES];

  it.each(LISTS)("walks %s whole, as the raw pages have it, with and without filters", async (list) => {
    const tenant = await newTenant(server());
    await sync(
      server(),
      tenant,
      list,
      Array.from({ length: 230 }, () => FACTORIES[list]!()),
    );
    const resource = new ListResource(client(tenant), list) as ListResource<ListName>;
    const walked: unknown[] = [];
    for await (const item of resource.list({}, { limit: 37 })) walked.push(item);
    expect(walked).toEqual((await readAll(server(), tenant.keys.read, `/v1/${list}`, [37])).items);
    const pages: Page<unknown>[] = [];
    for await (const page of resource.pages({ name: "a" } as never, { limit: 50 })) pages.push(page);
    expect(pages.flatMap((p) => p.data)).toEqual((await readAll(server(), tenant.keys.read, `/v1/${list}?name=a`, [50])).items);
    expect(pages.at(-1)?.cursor).toBeNull();
  });

  it("walks a time window", async () => {
    const tenant = await newTenant(server());
    await sync(
      server(),
      tenant,
      "withdrawals",
      Array.from({ length: 120 }, (_, i) =>
        FACTORIES.withdrawals!({ deliveredAt: new Date(Date.UTC(2026, 10, 1 + (i % 20))).toISOString() }),
      ),
    );
    const filters = { createdSince: "2026-11-05T00:00:00Z", createdUntil: "2026-11-10T23:59:59Z" };
    const walked = [];
    for await (const w of client(tenant).withdrawals.list(filters, { limit: 10 })) walked.push(w);
    expect(walked).toHaveLength(36);
    expect(walked).toEqual(
      (
        await readAll(
          server(),
          tenant.keys.read,
          `/v1/withdrawals?createdSince=${filters.createdSince}&createdUntil=${filters.createdUntil}`,
          [10],
        )
      ).items,
    );
  });

  it("throws one typed error with the status, code, detail, param and request id", async () => {
    const tenant = await newTenant(server());
    const error = await client(tenant)
      .withdrawals.page({ createdSince: "yesterday" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CriblineError);
    expect(error).toMatchObject({ status: 400, code: "invalid_time", param: "createdSince", requestId: expect.any(String) });
    const denied = await new CriblineClient({ baseUrl: server().url, apiKey: tenant.keys.sync }).withdrawals
      .page()
      .catch((e: unknown) => e);
    expect(denied).toMatchObject({ status: 403, code: "forbidden" });
  });
});

describe("an unreachable server", () => {
  it("is named with the reason, not as 'fetch failed'", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(closed.address() as { port: number }).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const error = await new CriblineClient({ baseUrl: `${url}/`, apiKey: "crib_unused", maxRetries: 0 }).withdrawals
      .page()
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 0, code: "network_error", detail: `could not reach ${url}: ECONNREFUSED` });
  });
});

describe("retries and time limits", () => {
  let stub: Server;
  let stubUrl = "";
  const plan: ("503" | "429" | "hang" | "pass")[] = [];
  let seen = 0;
  beforeAll(async () => {
    // In front of the real server: answers as `plan` says, then passes requests on.
    stub = createServer(async (req, res) => {
      seen += 1;
      const step = plan.shift() ?? "pass";
      if (step === "hang") return;
      if (step !== "pass") {
        res.writeHead(Number(step), { "content-type": "application/problem+json", "retry-after": "0", "x-request-id": "stub" });
        return res.end(
          JSON.stringify({
            type: "about:blank",
            status: Number(step),
            title: "t",
            detail: "d",
            code: step === "429" ? "rate_limited" : "service_unavailable",
          }),
        );
      }
      let body = "";
      for await (const chunk of req) body += chunk;
      const answer = await fetch(`${server().url}${req.url}`, {
        method: req.method,
        headers: req.headers as Record<string, string>,
        body: body === "" ? undefined : body,
      });
      res.writeHead(answer.status, { "content-type": answer.headers.get("content-type") ?? "application/json" });
      res.end(await answer.text());
    });
    await new Promise<void>((resolve) => stub.listen(0, "127.0.0.1", resolve));
    stubUrl = `http://127.0.0.1:${(stub.address() as { port: number }).port}`;
  });
  afterAll(() => {
    stub.closeAllConnections();
    stub.close();
  });

  it("retries a 503 and a 429 after their Retry-After, then answers", async () => {
    const tenant = await newTenant(server());
    plan.push("503", "429");
    seen = 0;
    const page = await client(tenant, { baseUrl: stubUrl }).withdrawals.page();
    expect(page).toEqual({ data: [], cursor: null });
    expect(seen).toBe(3);
  });

  it("gives up after maxRetries with the last error", async () => {
    const tenant = await newTenant(server());
    plan.push("503", "503", "503");
    const error = await client(tenant, { baseUrl: stubUrl, maxRetries: 2 })
      .withdrawals.page()
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 503, code: "service_unavailable", requestId: "stub" });
    expect(plan).toEqual([]);
  });

  it("ends a request that gets no answer in time, and retries it", async () => {
    const tenant = await newTenant(server());
    plan.push("hang", "hang");
    const error = await client(tenant, { baseUrl: stubUrl, timeoutMs: 300, maxRetries: 1 })
      .withdrawals.page()
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ status: 0, code: "timeout" });
    plan.push("hang");
    seen = 0;
    expect((await client(tenant, { baseUrl: stubUrl, timeoutMs: 300, maxRetries: 1 }).withdrawals.page()).cursor).toBeNull();
    expect(seen).toBe(2);
  });

  it("stops when the caller's signal aborts", async () => {
    const tenant = await newTenant(server());
    plan.push("hang");
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("enough")), 100);
    await expect(client(tenant, { baseUrl: stubUrl }).withdrawals.page({}, { signal: controller.signal })).rejects.toThrow("enough");
    plan.length = 0;
  });

  it("syncs more than 1,000 records as several batches, retried safely, and says what each did", async () => {
    const tenant = await newTenant(server());
    const records = Array.from({ length: 2500 }, () => FACTORIES.withdrawals!()) as never[];
    plan.push("pass", "503");
    const result = await client(tenant, { baseUrl: stubUrl }).withdrawals.sync(records);
    expect(result).toMatchObject({ created: 2500, updated: 0, unchanged: 0 });
    expect(result.batches.map((b) => [b.first, b.count, b.created])).toEqual([
      [0, 1000, 1000],
      [1000, 1000, 1000],
      [2000, 500, 500],
    ]);
    const again = await client(tenant).withdrawals.sync(records);
    expect(again).toMatchObject({ created: 0, unchanged: 2500 });
  });
});

describe("webhooks", () => {
  it("verifies what the server signed, with either secret during a rotation, and refuses anything else", async () => {
    const receiver = new Receiver();
    await receiver.open();
    // The server's webhooks go out through a delivery loop of this test's own.
    const deliveries = new DeliveryLoop(server().storage.db, { allowPrivate: true }, (error) => {
      throw error;
    });
    deliveries.start(50);
    try {
      const tenant = await newTenant(server());
      const endpoint = (
        await request(server(), "POST", "/v1/webhook-endpoints", {
          key: tenant.keys.admin,
          body: { url: receiver.url, events: ["withdrawal.created"] },
        })
      ).body;
      const record = FACTORIES.withdrawals!();
      await sync(server(), tenant, "withdrawals", [record]);
      for (let i = 0; i < 100 && receiver.received.length === 0; i += 1) await new Promise((resolve) => setTimeout(resolve, 50));
      const [first] = receiver.received;
      const event = await verifyWebhook({ secret: endpoint.secret, headers: first!.headers as Record<string, string>, body: first!.body });
      expect(event.type).toBe("withdrawal.created");
      if (event.type === "withdrawal.created") expect(event.data.id).toBe(record.id);
      const headers = first!.headers as Record<string, string>;
      await expect(
        verifyWebhook({ secret: endpoint.secret, headers, body: first!.body.replace(record.id as string, "other") }),
      ).rejects.toBeInstanceOf(WebhookVerificationError);
      await expect(
        verifyWebhook({ secret: "whsec_" + Buffer.from("not the secret").toString("base64"), headers, body: first!.body }),
      ).rejects.toThrow(/no signature matches/);
      await expect(
        verifyWebhook({ secret: endpoint.secret, headers, body: first!.body, now: Number(headers["webhook-timestamp"]) + 600 }),
      ).rejects.toThrow(/timestamp/);
      // Rotation: the server signs with both; a receiver with either secret accepts.
      const rotated = (
        await request(server(), "POST", `/v1/webhook-endpoints/${endpoint.id}/rotate-secret`, { key: tenant.keys.admin, body: {} })
      ).body;
      await sync(server(), tenant, "withdrawals", [FACTORIES.withdrawals!()]);
      for (let i = 0; i < 100 && receiver.received.length < 2; i += 1) await new Promise((resolve) => setTimeout(resolve, 50));
      const second = receiver.received[1]!;
      for (const secret of [endpoint.secret, rotated.secret, [rotated.secret, endpoint.secret]]) {
        expect((await verifyWebhook({ secret, headers: second.headers as Record<string, string>, body: second.body })).type).toBe(
          "withdrawal.created",
        );
      }
    } finally {
      await deliveries.stop();
      await receiver.close();
    }
  });
});

// Compile-time checks: each line must be a type error (tsc fails on an unused @ts-expect-error).
async function typeErrors(c: CriblineClient) {
  // @ts-expect-error withdrawals take no `code`
  await c.withdrawals.page({ code: "x" });
  // @ts-expect-error a window with a relationship filter
  await c.withdrawals.page({ createdSince: "2026-01-01T00:00:00Z", employeeId: "e-1" });
  // @ts-expect-error employees have no time window
  await c.employees.page({ createdSince: "2026-01-01T00:00:00Z" });
}
void typeErrors;
