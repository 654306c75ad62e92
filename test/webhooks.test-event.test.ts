/**
 * A test event for an endpoint, POST /v1/webhook-endpoints/{id}/test (docs/webhooks.md): a
 * signed `ping` sent at once to a real receiver on loopback, the answer saying what came of it,
 * and nothing stored.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CriblineClient, CriblineError } from "../client/src/index.js";
import { newTenant, request, useServer, type Reply, type TestTenant } from "./support/harness.js";
import { Receiver } from "./support/receiver.js";

/** A server that lets endpoints be on loopback (the receiver), and one with the default guard. */
const server = useServer({ CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true" });

const receiver = new Receiver();
beforeAll(() => receiver.open());
afterAll(() => receiver.close());

const BASE = "/v1/webhook-endpoints";

const call = (tenant: TestTenant, method: string, path: string, body?: unknown): Promise<Reply<any>> =>
  request(server(), method, path, { key: tenant.keys.admin, body });

async function endpointOn(tenant: TestTenant, url: string): Promise<{ id: string; secret: string }> {
  const reply = await call(tenant, "POST", BASE, { url, events: ["withdrawal.created"] });
  expect(reply.status, JSON.stringify(reply.body)).toBe(201);
  return reply.body;
}

describe("a test event for an endpoint", () => {
  it("sends a signed ping at once and answers with what came of it, storing nothing", async () => {
    const tenant = await newTenant(server());
    const endpoint = await endpointOn(tenant, receiver.url);
    receiver.received.length = 0;
    const reply = await call(tenant, "POST", `${BASE}/${endpoint.id}/test`);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toEqual({
      webhookId: expect.stringMatching(/^msg_/),
      eventType: "ping",
      attemptedAt: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      status: "succeeded",
      responseCode: 200,
      durationMs: expect.any(Number),
      error: null,
    });
    expect(receiver.received).toHaveLength(1);
    const [sent] = receiver.received;
    // Signed as every delivery is, with the endpoint's secret and the id the answer names.
    const event = new Webhook(endpoint.secret.slice("whsec_".length)).verify(sent!.body, sent!.headers as Record<string, string>);
    expect(event).toEqual({ type: "ping", timestamp: reply.body.attemptedAt, data: { endpointId: endpoint.id } });
    expect(sent!.headers["webhook-id"]).toBe(reply.body.webhookId);
    // Nothing is stored: the endpoint's attempt log stays empty.
    const attempts = await call(tenant, "GET", `${BASE}/${endpoint.id}/attempts`);
    expect(attempts.status).toBe(200);
    expect(attempts.body.data).toEqual([]);
  });

  it("says what went wrong: a receiver's error status, no receiver at all, a disabled endpoint sent all the same", async () => {
    const tenant = await newTenant(server());
    const endpoint = await endpointOn(tenant, receiver.url);
    receiver.answers = [503];
    const refused = await call(tenant, "POST", `${BASE}/${endpoint.id}/test`);
    expect(refused.status).toBe(200);
    expect(refused.body).toMatchObject({ status: "failed", responseCode: 503, error: "HTTP 503" });

    expect((await call(tenant, "POST", `${BASE}/${endpoint.id}/disable`)).status).toBe(200);
    const disabled = await call(tenant, "POST", `${BASE}/${endpoint.id}/test`);
    expect(disabled.body).toMatchObject({ status: "succeeded", responseCode: 200 });

    // A port nothing listens on.
    const closed = new Receiver();
    await closed.open();
    const gone = await endpointOn(tenant, closed.url);
    await closed.close();
    const unreachable = await call(tenant, "POST", `${BASE}/${gone.id}/test`);
    expect(unreachable.status).toBe(200);
    expect(unreachable.body).toMatchObject({ status: "failed", responseCode: null, error: expect.any(String) });
  });

  it("is a 404 for another tenant's endpoint or one that does not exist, and a 400 for a body", async () => {
    const [tenant, other] = [await newTenant(server()), await newTenant(server())];
    const endpoint = await endpointOn(tenant, receiver.url);
    const foreign = await call(other, "POST", `${BASE}/${endpoint.id}/test`);
    expect([foreign.status, foreign.body.code]).toEqual([404, "not_found"]);
    const missing = await call(tenant, "POST", `${BASE}/we_00000000000000000000000000/test`);
    expect(missing.status).toBe(404);
    const withBody = await call(tenant, "POST", `${BASE}/${endpoint.id}/test`, { url: "x" });
    expect([withBody.status, withBody.body.code]).toEqual([400, "invalid_body"]);
    const get = await call(tenant, "GET", `${BASE}/${endpoint.id}/test`);
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
  });

  it("is sent by the client's webhookEndpoints.test, which throws the API's error code", async () => {
    const tenant = await newTenant(server());
    const endpoint = await endpointOn(tenant, receiver.url);
    const client = new CriblineClient({ baseUrl: server().url, apiKey: tenant.keys.admin });
    expect(await client.webhookEndpoints.test(endpoint.id)).toMatchObject({ eventType: "ping", status: "succeeded", responseCode: 200 });
    const missing = await client.webhookEndpoints.test("we_00000000000000000000000000").catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(CriblineError);
    expect((missing as CriblineError).code).toBe("not_found");
  });
});
