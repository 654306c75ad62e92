/**
 * No secret leaves cribline in what it writes about a request (README: Errors, Logs): a whole
 * API key or a webhook secret sent in a path, a query parameter's name or value, a body field
 * or the x-request-id header reaches neither the log, nor an answer, nor a metric's labels.
 * Run as operators run it: `cribline serve` logging JSON to its standard output, with metrics.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { keyWith } from "../src/platform/keys.js";
import { freePort, lastLine, useCliWorkspace } from "./support/cli.js";
import { ENGINE } from "./support/databases.js";
import { withdrawal } from "./support/factories.js";

const workspace = useCliWorkspace();

/** Runs of 8 characters of the secret part (after `crib_` and the 8-character key id, or after `whsec_`), every 4th. */
function fragments(secret: string): string[] {
  const part = secret.startsWith("crib_") ? secret.slice(13) : secret.slice("whsec_".length);
  const out: string[] = [];
  for (let at = 0; at + 8 <= part.length; at += 4) out.push(part.slice(at, at + 8));
  return out;
}

function expectNoSecret(text: string, secret: string, where: string): void {
  for (const fragment of fragments(secret)) expect(text.includes(fragment), `${where} holds ${fragment} of ${secret}`).toBe(false);
}

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const base62 = (length: number) => Array.from(randomBytes(length), (byte) => BASE62[byte % 62]).join("");

/** The secret with one character of its secret part percent-encoded, as a client's URL may spell it. */
const escapedInside = (secret: string) =>
  `${encodeURIComponent(secret.slice(0, 16))}%${secret.charCodeAt(16).toString(16)}${encodeURIComponent(secret.slice(17))}`;

describe("secrets sent in a request", () => {
  it("reach no log line, no answer and no metric, wherever they are sent", async () => {
    const ws = workspace();
    if (ENGINE === "sqlite") expect((await ws.run(["migrate"])).code).toBe(0);
    expect((await ws.run(["tenants", "create", "acme"])).code).toBe(0);
    const key = lastLine((await ws.run(["keys", "create", "--tenant", "acme", "--scopes", "read,sync,admin"])).stdout);
    const metricsPort = await freePort();
    const serving = await ws.serve({
      LOG_LEVEL: "info",
      CRIBLINE_METRICS_PORT: String(metricsPort),
      CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true",
    });
    const answers: { request: string; answer: string }[] = [];
    const call = async (method: string, path: string, options: { body?: unknown; headers?: Record<string, string> } = {}) => {
      const response = await fetch(`${serving.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${key}`,
          ...(options.body === undefined ? {} : { "content-type": "application/json" }),
          ...options.headers,
        },
        body: options.body === undefined ? undefined : JSON.stringify(options.body),
      });
      const text = await response.text();
      answers.push({ request: `${method} ${path}`, answer: `${response.status} ${JSON.stringify([...response.headers])} ${text}` });
      return { status: response.status, text };
    };
    const endpoint = await call("POST", "/v1/webhook-endpoints", {
      body: { url: "http://127.0.0.1:9/hook", events: ["withdrawal.created"] },
    });
    expect(endpoint.status).toBe(201);
    const webhookSecret = JSON.parse(endpoint.text).secret as string;
    // The one answer that shows a secret, by design: the endpoint's creation.
    answers.splice(0);
    // A key no one has, and one of a key's shape whose checksum is wrong.
    const secrets = [key, keyWith(base62(32)), `crib_${base62(38)}`, webhookSecret];

    for (const secret of secrets) {
      for (const spelled of [encodeURIComponent(secret), escapedInside(secret)]) {
        await call("GET", `/v1/api-keys/${spelled}`);
        await call("POST", `/v1/api-keys/${spelled}/revoke`);
        await call("GET", `/v1/withdrawals/${spelled}`);
        await call("DELETE", `/v1/withdrawals/${spelled}`);
        await call("GET", `/v1/${spelled}`);
        await call("GET", `/v1/webhook-endpoints/${spelled}`);
        await call("POST", `/v1/webhook-endpoints/${spelled}/rotate-secret`);
        await call("GET", `/v1/webhook-endpoints/${spelled}/attempts`);
        await call("GET", `/v1/withdrawals?createdSince=${spelled}`);
        await call("GET", `/v1/withdrawals?name=a&${spelled}=1`);
        await call("GET", `/v1/api-keys?cursor=${spelled}`);
      }
      await call("GET", "/v1/withdrawals", { headers: { "x-request-id": secret.replace(/[+/=]/g, "") } });
      await call("POST", "/v1/sync/withdrawals", { body: { data: [withdrawal({ quantity: secret, deviceId: `${secret}!` })] } });
      await call("POST", "/v1/api-keys", { body: { name: "x", scopes: [secret] } });
      await call("POST", "/v1/api-keys", { body: { name: "x", scopes: ["read"], [secret]: 1 } });
    }

    // Sent unencoded, a webhook secret's "+" arrives as a space: the mask goes on past it.
    const plussed = `${webhookSecret.slice(0, 16)}+${webhookSecret.slice(16)}`;
    // A secret whose last character before its padding is "+" ends in a space as a name.
    for (const sent of ["whsec_abc+def/ghi", "whsec_abc+def/gh+=", plussed]) {
      const asName = JSON.parse((await call("GET", `/v1/withdrawals?${sent}=1`)).text);
      expect([asName.detail, asName.param]).toEqual(['unknown filter parameter "whsec_…"', "whsec_…"]);
      const asValue = JSON.parse((await call("GET", `/v1/withdrawals?createdSince=${sent}`)).text);
      expect(asValue.detail).toMatch(/; got "whsec_…"$/);
    }
    secrets.push(plussed.replace("+", " "));

    // The key's public id is kept: the answer still says which key was meant.
    const byKey = await call("GET", `/v1/api-keys/${key}`);
    expect(byKey.status).toBe(404);
    expect(JSON.parse(byKey.text).detail).toBe(`no API key with id "${key.slice(0, 13)}…"`);
    const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
    expect(metrics).toMatch(/cribline_http_requests_total\{route="\/v1\/api-keys\/:id"/);

    const marker = "secrets-last";
    await call("GET", "/healthz", { headers: { "x-request-id": marker } });
    for (let i = 0; i < 100 && !serving.stdout().includes(marker); i += 1) await new Promise((resolve) => setTimeout(resolve, 50));
    const log = serving.stdout() + serving.stderr();
    // Every request above has its line.
    expect(log.match(/"msg":"request"/g)?.length ?? 0).toBeGreaterThanOrEqual(answers.length);
    for (const secret of secrets) {
      expectNoSecret(log, secret, "the log");
      expectNoSecret(metrics, secret, "the metrics");
      for (const { request, answer } of answers) expectNoSecret(answer, secret, `the answer to ${request}`);
    }
  }, 120_000);

  it("reaches no output of keys revoke", async () => {
    const ws = workspace();
    if (ENGINE === "sqlite") expect((await ws.run(["migrate"])).code).toBe(0);
    expect((await ws.run(["tenants", "create", "acme"])).code).toBe(0);
    const key = lastLine((await ws.run(["keys", "create", "--tenant", "acme", "--scopes", "read"])).stdout);
    const mistyped = `${key.slice(0, -1)}${key.endsWith("A") ? "B" : "A"}`;
    const unknown = keyWith("0123456789abcdefghijklmnopqrstuv");
    const runs = [await ws.run(["keys", "revoke", mistyped]), await ws.run(["keys", "revoke", unknown])];
    for (const run of runs) expect(run.code).not.toBe(0);
    expect(runs[0]!.stderr).toContain(`"${key.slice(0, 13)}…" is neither a key id`);
    const revoked = await ws.run(["keys", "revoke", key]);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout.trim()).toBe(`revoked ${key.slice(0, 13)}`);
    for (const [secret, run] of [
      [mistyped, runs[0]!],
      [unknown, runs[1]!],
      [key, revoked],
    ] as const) {
      expectNoSecret(run.stdout + run.stderr, secret, "keys revoke");
    }
  });
});
