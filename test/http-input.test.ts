/**
 * How cribline reads what a request carries besides its query's rules (README: What a client
 * must know): one Authorization header only; an unencoded `+` in a time zone, a body that is
 * not JSON and a body over the limit each refused with words that say what to fix; and an
 * empty body with Content-Type: application/json taken as no body.
 */
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { withdrawal } from "./support/factories.js";
import { get, newTenant, request, useServer, type Reply, type TestServer } from "./support/harness.js";

const server = useServer({ CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true" });

function expectProblem(reply: Reply<any>, status: number, code: string): void {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expect(reply.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  expect(reply.body.code).toBe(code);
}

/** Sends `head` (request line and headers, CRLF-separated, no blank line) as it is, on its own connection. */
async function raw(srv: TestServer, head: string): Promise<{ status: number; headers: string; body: any }> {
  const { hostname, port } = new URL(srv.url);
  const text = await new Promise<string>((resolve, reject) => {
    const socket = connect(Number(port), hostname, () => socket.write(`${head}\r\nhost: cribline\r\nconnection: close\r\n\r\n`));
    let received = "";
    socket.setEncoding("utf8").on("data", (chunk: string) => (received += chunk));
    socket.on("end", () => resolve(received)).on("error", reject);
  });
  const [headers = "", body = ""] = text.split("\r\n\r\n");
  return { status: Number(headers.split(" ")[1]), headers: headers.toLowerCase(), body: body === "" ? undefined : JSON.parse(body) };
}

describe("several Authorization headers", () => {
  it("are refused with 400 in the problem format, whichever of them is valid, and counted against the address", async () => {
    const tenant = await newTenant(server());
    const one = await raw(server(), `GET /v1/withdrawals HTTP/1.1\r\nauthorization: Bearer ${tenant.keys.read}`);
    expect(one.status).toBe(200);
    expect(one.headers).toContain('ratelimit-policy: "read"');
    for (const [first, second] of [
      [tenant.keys.read, tenant.keys.read],
      [tenant.keys.read, "crib_nonsense"],
      ["crib_nonsense", tenant.keys.read],
    ]) {
      const reply = await raw(
        server(),
        `GET /v1/withdrawals HTTP/1.1\r\nAuthorization: Bearer ${first}\r\nauthorization: Bearer ${second}`,
      );
      expect(reply.status, JSON.stringify(reply.body)).toBe(400);
      expect(reply.headers).toMatch(/content-type: application\/problem\+json/);
      expect(reply.body).toMatchObject({ status: 400, code: "bad_request" });
      expect(reply.body.detail).toMatch(/more than one Authorization header/);
      expect(reply.headers).toContain('ratelimit-policy: "anonymous"');
    }
  });

  it("are refused before an action takes effect", async () => {
    const tenant = await newTenant(server());
    const id = tenant.keys.read.slice(0, 13);
    const head = `POST /v1/api-keys/${id}/revoke HTTP/1.1\r\nauthorization: Bearer ${tenant.keys.admin}\r\nauthorization: Bearer ${tenant.keys.all}`;
    expect((await raw(server(), head)).status).toBe(400);
    expect((await get(server(), `/v1/api-keys/${id}`, tenant.keys.admin)).body.revokedAt).toBeNull();
  });
});

describe("an unencoded + in a time zone", () => {
  it("is refused with a detail that says to send + as %2B; sent as %2B it is read", async () => {
    const tenant = await newTenant(server());
    const reply = await get(server(), "/v1/withdrawals?createdSince=2026-11-20T00:00:00+01:00", tenant.keys.read);
    expectProblem(reply, 400, "invalid_time");
    expect(reply.body.param).toBe("createdSince");
    expect(reply.body.detail).toContain('got "2026-11-20T00:00:00 01:00"');
    expect(reply.body.detail).toContain('a "+" in a query string means a space: send it as %2B');
    expect((await get(server(), "/v1/withdrawals?createdSince=2026-11-20T00:00:00%2B01:00", tenant.keys.read)).status).toBe(200);
  });

  it("is not suggested for a time that is wrong otherwise", async () => {
    const tenant = await newTenant(server());
    for (const value of ["2026-11-20", "2026-11-20%2000:00:00Z", "2026-11-20T00:00:00"]) {
      const reply = await get(server(), `/v1/withdrawals?createdUntil=${value}`, tenant.keys.read);
      expectProblem(reply, 400, "invalid_time");
      expect(reply.body.detail).not.toContain("%2B");
    }
  });
});

describe("a body that is not JSON", () => {
  it.each<[string, string, string, string]>([
    ["/v1/sync/withdrawals", '{\n  "data": [\n    {"id": "a",}\n  ]\n}', "line 3, column 16", 'found "}"'],
    ["/v1/sync/withdrawals", '{"data": [', "line 1, column 11", "the body ends"],
    ["/v1/api-keys", '{"name": "x", "scopes": [read]}', "line 1, column 26", 'found "r"'],
    ["/v1/api-keys", '{"name": "x"} {}', "line 1, column 15", "expected the end of the body"],
  ])("POST %s %j: says where it stops being JSON", async (path, body, where, what) => {
    const tenant = await newTenant(server());
    const reply = await request(server(), "POST", path, {
      key: tenant.keys.all,
      rawBody: body,
      headers: { "content-type": "application/json" },
    });
    expectProblem(reply, 400, "invalid_body");
    expect(reply.body.detail).toMatch(/^the request body is not valid JSON: at /);
    expect(reply.body.detail).toContain(where);
    expect(reply.body.detail).toContain(what);
  });
});

describe("a body over the limit", () => {
  it("is 413 with the limit in bytes in its detail", async () => {
    const tenant = await newTenant(server());
    const reply = await request(server(), "POST", "/v1/sync/withdrawals", {
      key: tenant.keys.sync,
      body: { data: [withdrawal({ padding: "x".repeat(server().config.syncBodyLimit) })] },
    });
    expectProblem(reply, 413, "payload_too_large");
    expect(reply.body.detail).toBe(
      `the request body is larger than ${server().config.syncBodyLimit} bytes, the most this endpoint accepts`,
    );
  });
});

describe("an empty body with Content-Type: application/json", () => {
  const empty = (key: string) => ({ key, rawBody: "", headers: { "content-type": "application/json" } });

  it("is no body on the actions that take none", async () => {
    const tenant = await newTenant(server());
    const id = tenant.keys.read.slice(0, 13);
    const revoked = await request(server(), "POST", `/v1/api-keys/${id}/revoke`, empty(tenant.keys.admin));
    expect(revoked.status, JSON.stringify(revoked.body)).toBe(200);
    expect(revoked.body.revokedAt).not.toBeNull();
    const made = await request(server(), "POST", "/v1/webhook-endpoints", {
      key: tenant.keys.admin,
      body: { url: "http://127.0.0.1:9/hook", events: ["withdrawal.created"] },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(201);
    for (const action of ["rotate-secret", "disable", "enable"]) {
      const reply = await request(server(), "POST", `/v1/webhook-endpoints/${made.body.id}/${action}`, empty(tenant.keys.admin));
      expect(reply.status, `${action}: ${JSON.stringify(reply.body)}`).toBe(200);
    }
  });

  it("is still refused where a body is required", async () => {
    const tenant = await newTenant(server());
    for (const path of ["/v1/api-keys", "/v1/webhook-endpoints", "/v1/sync/withdrawals"]) {
      const reply = await request(server(), "POST", path, empty(tenant.keys.all));
      expectProblem(reply, 400, "invalid_body");
    }
    expect((await get(server(), "/v1/api-keys", tenant.keys.admin)).body.data).toHaveLength(4);
  });
});
