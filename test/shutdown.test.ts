/**
 * Shutting down: a request that arrives on an open connection while the server closes is
 * answered as any other (with Connection: close), not with a bare framework 503.
 */
import { connect } from "node:net";
import { setTimeout as sleep } from "node:timers/promises";
import { expect, it } from "vitest";
import { withdrawal } from "./support/factories.js";
import { newTenant, useServer } from "./support/harness.js";

const server = useServer();

/** Sends `first`, then, once `between` ran, `second` on the same connection; resolves with all that came back. */
function pipelined(url: string, first: string, rest: string, between: () => Promise<void>): Promise<string> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (received += chunk));
    socket.on("error", reject);
    socket.on("close", () => resolve(received));
    socket.write(first, () => void between().then(() => socket.write(rest), reject));
  });
}

it("answers a request that comes on an open connection while the server closes", async () => {
  const tenant = await newTenant(server());
  const body = JSON.stringify({ data: [withdrawal()] });
  const headers = (method: string, path: string, key: string) =>
    `${method} ${path} HTTP/1.1\r\nhost: cribline\r\nauthorization: Bearer ${key}\r\nconnection: keep-alive\r\n`;
  // The sync's body is held back until the server has begun to close; the list follows it.
  const first = `${headers("POST", "/v1/sync/withdrawals", tenant.keys.sync)}content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n`;
  const rest = `${body}${headers("GET", "/v1/withdrawals", tenant.keys.read)}\r\n`;
  let closed: Promise<void> | undefined;
  const received = await pipelined(server().url, first, rest, async () => {
    await sleep(100); // the sync is under way
    closed = server().app.close();
    await sleep(100);
  });
  await closed;
  const statuses = [...received.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => Number(m[1]));
  expect(statuses, received).toEqual([200, 200]);
  expect(received).toMatch(/"created":1/);
  expect(received).toMatch(/^connection: close$/im);
  // A list page (node runs pipelined requests side by side: it may not see the sync's record).
  expect(received).toMatch(/\{"data":\[.*\],"cursor":null\}$/);
});
