/**
 * The webhook address filter (README: "Webhooks"): with CRIBLINE_WEBHOOKS_ALLOW_PRIVATE off, an
 * endpoint is refused unless every address it names is globally reachable unicast, whatever
 * the spelling (decimal, octal and hex IPv4, IPv6 forms that carry an IPv4 address, names that
 * resolve to such addresses). A canary listener on loopback counts connections: none may come.
 * Also: requests Node's HTTP server would answer bare (no Host, an unknown Expect, CONNECT) are
 * answered in the problem format.
 */
import { createServer, connect, type Server } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newTenant, request, useServer } from "./support/harness.js";

/** The test's DNS: a name's addresses, or no such name. */
const NAMES: Record<string, string[]> = {
  "loop.test": ["127.0.0.1"],
  "nat64.test": ["64:ff9b::7f00:1"],
  "mixed.test": ["93.184.216.34", "10.0.0.1"],
  "mapped.test": ["::ffff:169.254.169.254"],
  "metadata.test": ["169.254.169.254"],
  "six.test": ["::1"],
  "public.test": ["93.184.216.34", "2606:4700::1111"],
};

const server = useServer(
  {},
  {
    resolveHost: async (host) => {
      const addresses = NAMES[host];
      if (addresses === undefined) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: "ENOTFOUND" });
      return addresses.map((address) => ({ address }));
    },
  },
);

let canary: Server;
let connections = 0;
let port = 0;
beforeAll(async () => {
  canary = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  await new Promise<void>((resolve) => canary.listen(0, "::", resolve));
  port = (canary.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((resolve) => canary.close(() => resolve())));

type Verdict = "refused" | "allowed" | "invalid";
const P = () => port;

/** [URL, verdict]: a URL's host as a client would write it; the port is the canary's where it matters. */
const TABLE: [() => string, Verdict][] = [
  // IPv4 loopback, however it is spelled (a URL parser turns each into 127.0.0.1).
  [() => `http://127.0.0.1:${P()}/`, "refused"],
  [() => `http://127.1:${P()}/`, "refused"],
  [() => `http://2130706433:${P()}/`, "refused"],
  [() => `http://0x7f000001:${P()}/`, "refused"],
  [() => `http://0177.0.0.1:${P()}/`, "refused"],
  [() => `http://0x7f.0.0.1:${P()}/`, "refused"],
  [() => `http://017700000001:${P()}/`, "refused"],
  [() => `http://127.255.255.254:${P()}/`, "refused"],
  // IPv6 loopback and the forms that carry IPv4 loopback.
  [() => `http://[::1]:${P()}/`, "refused"],
  [() => `http://[0:0:0:0:0:0:0:1]:${P()}/`, "refused"],
  [() => `http://[::ffff:127.0.0.1]:${P()}/`, "refused"],
  [() => `http://[::ffff:7f00:1]:${P()}/`, "refused"],
  [() => `http://[0:0:0:0:0:ffff:127.0.0.1]:${P()}/`, "refused"],
  [() => `http://[::ffff:0:7f00:1]:${P()}/`, "refused"],
  [() => `http://[::127.0.0.1]:${P()}/`, "refused"],
  [() => `http://[64:ff9b::7f00:1]:${P()}/`, "refused"],
  [() => `http://[64:ff9b::127.0.0.1]:${P()}/`, "refused"],
  [() => `http://[2002:7f00:1::]:${P()}/`, "refused"],
  [() => `http://[2002:7f00:0001:0000::1]:${P()}/`, "refused"],
  // NAT64 and friends carrying other special addresses.
  [() => "http://[64:ff9b::a9fe:a9fe]/", "refused"],
  [() => "http://[64:ff9b::a00:1]/", "refused"],
  [() => "http://[64:ff9b:1::a00:1]/", "refused"],
  [() => "http://[2002:c000:0201::1]/", "refused"],
  [() => "http://[2001::1]/", "refused"],
  [() => "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", "refused"],
  // IPv4 special-purpose ranges.
  [() => "http://0.0.0.0/", "refused"],
  [() => "http://10.0.0.1/", "refused"],
  [() => "http://100.64.0.1/", "refused"],
  [() => "http://169.254.169.254/", "refused"],
  [() => "http://172.16.5.4/", "refused"],
  [() => "http://172.31.255.255/", "refused"],
  [() => "http://192.0.0.1/", "refused"],
  [() => "http://192.0.2.1/", "refused"],
  [() => "http://192.88.99.1/", "refused"],
  [() => "http://192.168.0.1/", "refused"],
  [() => "http://198.18.0.1/", "refused"],
  [() => "http://198.19.255.1/", "refused"],
  [() => "http://198.51.100.7/", "refused"],
  [() => "http://203.0.113.9/", "refused"],
  [() => "http://224.0.0.1/", "refused"],
  [() => "http://239.255.255.250/", "refused"],
  [() => "http://240.0.0.1/", "refused"],
  [() => "http://255.255.255.255/", "refused"],
  // IPv6 special-purpose ranges.
  [() => "http://[::]/", "refused"],
  [() => "http://[100::1]/", "refused"],
  [() => "http://[2001:2::1]/", "refused"],
  [() => "http://[2001:db8::1]/", "refused"],
  [() => "http://[2001:10::1]/", "refused"],
  [() => "http://[3fff::1]/", "refused"],
  [() => "http://[5f00::1]/", "refused"],
  [() => "http://[fc00::1]/", "refused"],
  [() => "http://[fd12:3456::1]/", "refused"],
  [() => "http://[fe80::1]/", "refused"],
  [() => "http://[fec0::1]/", "refused"],
  [() => "http://[ff02::1]/", "refused"],
  [() => "http://[4000::1]/", "refused"],
  // Names.
  [() => `http://localhost:${P()}/`, "refused"],
  [() => `http://api.localhost:${P()}/`, "refused"],
  [() => `http://loop.test:${P()}/`, "refused"],
  [() => `http://nat64.test:${P()}/`, "refused"],
  [() => "http://mixed.test/", "refused"],
  [() => "http://mapped.test/", "refused"],
  [() => "http://metadata.test/latest/meta-data/", "refused"],
  [() => `http://six.test:${P()}/`, "refused"],
  // Spellings that are not valid URLs (zones), and names that do not resolve.
  [() => `http://[fe80::1%25eth0]:${P()}/`, "invalid"],
  [() => `http://[::1%251]:${P()}/`, "invalid"],
  [() => "http://nowhere.test/", "invalid"],
  // Public addresses, also inside the IPv6 forms that carry one.
  [() => "https://93.184.216.34/hooks", "allowed"],
  [() => "https://8.8.8.8:8443/", "allowed"],
  [() => "https://[2606:4700::1111]/", "allowed"],
  [() => "https://public.test/hooks", "allowed"],
  [() => "https://[64:ff9b::808:808]/", "allowed"],
  [() => "https://[2002:808:808::1]/", "allowed"],
  [() => "https://[::ffff:8.8.8.8]/", "allowed"],
];

describe("the webhook address filter", () => {
  it("has a table of at least 60 addresses and spellings", () => {
    expect(TABLE.length).toBeGreaterThanOrEqual(60);
  });

  it.each(TABLE.map(([url, verdict]) => [url().replace(/:\d{4,5}\//, ":<canary>/"), url, verdict] as const))(
    "%s is %s",
    async (_shown, url, verdict) => {
      const tenant = await newTenant(server());
      const reply = await request(server(), "POST", "/v1/webhook-endpoints", {
        key: tenant.keys.admin,
        body: { url: url(), events: ["withdrawal.created"] },
      });
      if (verdict === "allowed") {
        expect(reply.status, JSON.stringify(reply.body)).toBe(201);
      } else {
        expect(reply.status, JSON.stringify(reply.body)).toBe(400);
        expect(reply.headers.get("content-type")).toMatch(/^application\/problem\+json/);
        expect(reply.body.code).toBe(verdict === "refused" ? "private_address" : "invalid_url");
        // A developer who meets this with a local receiver learns which setting lets it through.
        if (verdict === "refused") expect(reply.body.detail).toMatch(/CRIBLINE_WEBHOOKS_ALLOW_PRIVATE=true \(for local development only\)/);
      }
    },
  );

  it("never contacted any of them", async () => {
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(connections).toBe(0);
  });
});

/** Sends raw bytes and reads the whole answer (the server closes the connection). */
function raw(text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const address = new URL(server().url);
    const socket = connect(Number(address.port), address.hostname);
    let answer = "";
    socket.setEncoding("utf8").on("data", (chunk: string) => (answer += chunk));
    socket.on("end", () => resolve(answer));
    socket.on("close", () => resolve(answer));
    socket.on("error", reject);
    socket.write(text);
  });
}

function problemOf(answer: string) {
  const [head = "", body = ""] = answer.split("\r\n\r\n");
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1]);
  return { status, head: head.toLowerCase(), body: JSON.parse(body) };
}

describe("requests the HTTP server itself would answer", () => {
  it("answers a request without Host with 400 in the problem format", async () => {
    const answer = problemOf(await raw("GET /v1/withdrawals HTTP/1.1\r\nConnection: close\r\n\r\n"));
    expect(answer.status).toBe(400);
    expect(answer.head).toMatch(/content-type: application\/problem\+json/);
    expect(answer.head).toMatch(/x-request-id: \S+/);
    // Counted as any request without a key is, and saying so.
    expect(answer.head).toMatch(/ratelimit-policy: "anonymous";q=\d+;w=\d+/);
    expect(answer.head).toMatch(/ratelimit: "anonymous";r=\d+;t=\d+/);
    expect(answer.body).toMatchObject({ status: 400, code: "bad_request", detail: expect.stringMatching(/Host/) });
  });

  it("takes an HTTP/1.0 request without Host, which that version allows", async () => {
    const answer = await raw("GET /healthz HTTP/1.0\r\n\r\n");
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toContain('{"status":"ok"}');
  });

  it("answers an Expect other than 100-continue with 417 in the problem format", async () => {
    const answer = problemOf(
      await raw(
        "POST /v1/sync/withdrawals HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}",
      ),
    );
    expect(answer.status).toBe(417);
    expect(answer.head).toMatch(/content-type: application\/problem\+json/);
    expect(answer.head).toMatch(/x-request-id: \S+/);
    expect(answer.body).toMatchObject({ status: 417, code: "expectation_failed", title: "Expectation failed" });
  });

  it("answers CONNECT with 405 in the problem format instead of closing the connection", async () => {
    const answer = problemOf(await raw("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n"));
    expect(answer.status).toBe(405);
    expect(answer.head).toMatch(/content-type: application\/problem\+json/);
    expect(answer.head).toMatch(/x-request-id: \S+/);
    expect(answer.body).toMatchObject({ status: 405, code: "method_not_allowed" });
  });

  it("still takes Expect: 100-continue", async () => {
    const tenant = await newTenant(server());
    const body = '{"data":[]}';
    const answer = await raw(
      `POST /v1/sync/withdrawals HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${tenant.keys.sync}\r\nExpect: 100-continue\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(answer).toMatch(/^HTTP\/1\.1 100 Continue/);
    expect(answer).toMatch(/HTTP\/1\.1 400 /);
  });
});
