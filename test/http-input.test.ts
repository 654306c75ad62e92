/**
 * How cribline reads what a request carries besides its query's rules (README: What a client
 * must know): one Authorization header only; an unencoded `+` in a time zone, a body that is
 * not JSON and a body over the limit each refused with words that say what to fix; and an
 * empty body with Content-Type: application/json taken as no body.
 */
import { connect } from "node:net";
import { describe, expect, it } from "vitest";
import { get, newTenant, useServer, type TestServer } from "./support/harness.js";

const server = useServer({ CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true" });

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
