/**
 * The example integrator of docs/webhooks.md (examples/webhook-client.mjs), run for real as a
 * child process against a real `cribline serve`: its receiver verifies signatures (401 for a
 * bad one), de-duplicates on webhook-id and stores each record once; after an outage of the
 * receiver, `reconcile` over the documented window (from the start of the outage minus the
 * longest lateness of a device, to now) finds what the webhooks missed, a record synced late
 * included, and a second run adds nothing. It does not depend on whether the deliveries that
 * failed during the outage are retried meanwhile: the receiver is down until the end.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { createServer as createNetServer } from "node:net";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Webhook } from "standardwebhooks";
import { afterEach, expect, it } from "vitest";
import { withdrawal } from "./support/factories.js";
import { freePort, httpGet, lastLine, readAllOver, useCliWorkspace, type CliResult, type ServeProcess } from "./support/cli.js";
import { ENGINE } from "./support/databases.js";
import { expectSuccess } from "./support/cli-steps.js";

const CLIENT = fileURLToPath(new URL("../examples/webhook-client.mjs", import.meta.url));
const HOUR = 60 * 60 * 1000;
const workspace = useCliWorkspace();

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
});

async function waitFor(what: string, condition: () => boolean | Promise<boolean>, detail = () => "", timeoutMs = 15_000): Promise<void> {
  for (const start = Date.now(); !(await condition()); await sleep(50)) {
    if (Date.now() - start > timeoutMs) throw new Error(`waited ${timeoutMs} ms for ${what}\n${detail()}`);
  }
}

/** Starts `webhook-client.mjs receive` and waits until it listens. */
async function startReceiver(port: number, secret: string, store: string) {
  const child = spawn(process.execPath, [CLIENT, "receive", "--port", String(port), "--secret", secret, "--store", store], {
    env: { PATH: process.env.PATH },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  for (const stream of [child.stdout, child.stderr]) stream.setEncoding("utf8").on("data", (chunk: string) => (output += chunk));
  const exited = new Promise((resolve) => child.once("exit", resolve));
  await waitFor(
    "the receiver to listen",
    () => {
      if (child.exitCode !== null) throw new Error(`the receiver exited: ${output}`);
      return output.includes(`listening on http://127.0.0.1:${port}`);
    },
    () => output,
  );
  const stop = async () => {
    child.kill("SIGTERM");
    await exited;
  };
  return { output: () => output, stop };
}

/** Runs `webhook-client.mjs reconcile`; returns how many records it says the webhooks missed. */
async function reconcile(args: string[]): Promise<number> {
  const { stdout } = await promisify(execFile)(process.execPath, [CLIENT, "reconcile", ...args], {
    env: { PATH: process.env.PATH },
    timeout: 20_000,
  });
  const missed = /: \d+ records? read, (\d+) missed by webhooks and added to /.exec(lastLine(stdout))?.[1];
  expect(missed, stdout).toBeDefined();
  return Number(missed);
}

/** The withdrawals in the example's store (a JSON-lines file), one entry per line that holds one. */
function stored(store: string): Record<string, unknown>[] {
  if (!existsSync(store)) return [];
  // Whole lines only: the receiver may be appending one right now.
  const entries = readFileSync(store, "utf8")
    .split("\n")
    .slice(0, -1)
    .map((line) => JSON.parse(line));
  return entries.filter((entry) => entry.collection === "withdrawals").map((entry) => entry.record);
}

const ids = (records: Record<string, unknown>[]) => records.map((r) => r.id as string).sort();

async function call(base: string, key: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }> {
  const response = await fetch(`${base}${path}`, {
    method,
    headers: { authorization: `Bearer ${key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, body: text === "" ? null : JSON.parse(text) };
}

/** POSTs an event straight to the receiver with the given headers; returns the status. */
async function postEvent(url: string, body: string, headers: Record<string, string>): Promise<number> {
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...headers }, body });
  await response.arrayBuffer();
  return response.status;
}

/** Runs the example to its end, whatever its exit code. */
function runClient(args: string[]): Promise<CliResult> {
  return new Promise((resolve) =>
    execFile(process.execPath, [CLIENT, ...args], { env: { PATH: process.env.PATH }, timeout: 20_000 }, (error, stdout, stderr) =>
      resolve({ code: error === null ? 0 : typeof error.code === "number" ? error.code : null, signal: null, stdout, stderr }),
    ),
  );
}

it("answers --help and --version, and refuses an unknown flag, command or argument in one line, never with a stack trace", async () => {
  for (const args of [["--help"], ["-h"], ["reconcile", "--help"]]) {
    const help = await runClient(args);
    expect(help, args.join(" ")).toMatchObject({ code: 0, stderr: "" });
    expect(help.stdout).toMatch(/^usage: node examples\/webhook-client\.mjs <command> \[flags\]/);
    for (const word of ["receive", "reconcile", "--secret", "--port", "--host", "--api", "--key", "--since", "--lateness", "--until"])
      expect(help.stdout).toContain(word);
    for (const word of ["--collections", "--store", "--version", "CRIBLINE_API_KEY", "CRIBLINE_WEBHOOK_SECRET", "STORE_FILE"])
      expect(help.stdout).toContain(word);
  }
  const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
  expect(await runClient(["--version"])).toMatchObject({ code: 0, stdout: `webhook-client.mjs (cribline ${version})\n`, stderr: "" });

  const busy = createNetServer();
  await new Promise<void>((resolve) => busy.listen(0, "127.0.0.1", resolve));
  const busyPort = String((busy.address() as { port: number }).port);
  const refusals: [string[], RegExp][] = [
    [["--bogus"], /^unknown flag --bogus \(see --help\)$/],
    [["reconcile", "--Since", "1h"], /^unknown flag --Since \(see --help\)$/],
    [["frobnicate"], /^unknown command "frobnicate": use receive or reconcile \(see --help\)$/],
    [[], /^no command given: use receive or reconcile \(see --help\)$/],
    [["reconcile", "extra"], /^unexpected argument "extra" \(see --help\)$/],
    [["reconcile", "--since"], /--since <value>' argument missing \(see --help\)$/],
    [["reconcile", "--key", "crib_x", "--since", "yesterday"], /^not a date-time with time and zone, nor a duration: yesterday$/],
    [["receive"], /^--secret whsec_\.\.\. \(or CRIBLINE_WEBHOOK_SECRET\) is required$/],
    [["receive", "--secret", "whsec_x", "--port", "http"], /^--port must be a port number \(0 to 65535\); got http$/],
    [["receive", "--secret", "whsec_x", "--port", busyPort], new RegExp(`^127\\.0\\.0\\.1:${busyPort} is in use: choose another --port$`)],
  ];
  try {
    for (const [args, message] of refusals) {
      const result = await runClient(args);
      expect(result, args.join(" ")).toMatchObject({ code: 2, stdout: "" });
      // One line, with the message: no stack trace.
      expect(result.stderr.endsWith("\n") && result.stderr.split("\n").length === 2, result.stderr).toBe(true);
      expect(result.stderr.trimEnd().replace(/^webhook-client: /, ""), result.stderr).toMatch(message);
    }
  } finally {
    await new Promise((resolve) => busy.close(resolve));
  }
});

it("says once in each serving process that CRIBLINE_WEBHOOKS_ALLOW_PRIVATE is on, and nothing of it when it is off", async () => {
  const ws = workspace();
  const warning =
    "CRIBLINE_WEBHOOKS_ALLOW_PRIVATE is on: webhooks may be sent to loopback and private addresses (for local development only)";
  // Several processes need PostgreSQL: there, each worker of `serve --workers 2` says it.
  const [args, processes] = ENGINE === "postgres" ? [["--workers", "2"], 2] : [[], 1];
  const mentions = (server: ServeProcess) =>
    `${server.stdout()}${server.stderr()}`.split("\n").filter((line) => line.includes("CRIBLINE_WEBHOOKS_ALLOW_PRIVATE"));
  for (const value of ["true", "1"]) {
    const on = await ws.serve({ CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: value, LOG_LEVEL: "info" }, args);
    const lines = mentions(on).map((line) => JSON.parse(line) as { level: number; msg: string });
    expect(lines, on.stdout()).toEqual(Array.from({ length: processes }, () => expect.objectContaining({ level: 40, msg: warning })));
    await on.stop();
  }
  for (const value of ["false", undefined]) {
    const off = await ws.serve({ CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: value, LOG_LEVEL: "info" }, args);
    expect(mentions(off), off.stdout()).toEqual([]);
    await off.stop();
  }
}, 60_000);

it("receives, verifies and de-duplicates webhooks, and reconcile finds what an outage missed, records synced late included", async () => {
  const ws = workspace();
  const server = await ws.serve({ CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true" });
  expectSuccess(await ws.run(["tenants", "create", "acme"]));
  const key = lastLine(expectSuccess(await ws.run(["keys", "create", "--tenant", "acme", "--scopes", "read,sync,admin"])).stdout);
  const sync = async (records: Record<string, unknown>[]) =>
    expect((await call(server.url, key, "POST", "/v1/sync/withdrawals", { data: records })).status).toBe(200);

  // An endpoint on the port the receiver is about to take, then the receiver with its secret.
  const port = await freePort();
  const receiverUrl = `http://127.0.0.1:${port}/cribline`;
  const created = await call(server.url, key, "POST", "/v1/webhook-endpoints", { url: receiverUrl, events: ["withdrawal.created"] });
  expect(created.status).toBe(201);
  const { id: endpointId, secret } = created.body as { id: string; secret: string };
  const store = join(ws.dir, "store.jsonl");
  const receiver = await startReceiver(port, secret, store);

  // Webhooks arrive, are verified and stored once each.
  const now = Date.now();
  const first = [0, 1, 2].map((i) => withdrawal({ deliveredAt: new Date(now - 60_000 + i).toISOString() }));
  await sync(first);
  await waitFor("three records in the store", () => stored(store).length >= 3, receiver.output);
  expect(ids(stored(store))).toEqual(ids(first));

  // A replay comes with the same webhook-id: answered 2xx and ignored. (The store is written
  // before the receiver answers, so the attempt log may lag behind it.)
  const attempts = `/v1/webhook-endpoints/${endpointId}/attempts`;
  const succeeded = async () =>
    ((await call(server.url, key, "GET", attempts)).body.data as { deliveryId: string; status: string }[]).filter(
      (a) => a.status === "succeeded",
    );
  await waitFor("three attempts to be logged", async () => (await succeeded()).length === 3);
  const { deliveryId } = (await succeeded())[0]!;
  const replay = await call(server.url, key, "POST", `/v1/webhook-endpoints/${endpointId}/deliveries/${deliveryId}/replay`);
  expect(replay).toEqual({ status: 202, body: { replayed: 1 } });
  await waitFor("the replay to succeed", async () => (await succeeded()).length === 4);
  await waitFor("the receiver to log the duplicate", () => / again: duplicate, ignored/.test(receiver.output()), receiver.output);

  // Requests that cribline did not sign are refused; several signatures (a rotation) are fine.
  const signer = new Webhook(secret);
  const known = (await httpGet(`${server.url}/v1/withdrawals?limit=1`, key)).body.data[0];
  const body = JSON.stringify({ type: "withdrawal.created", timestamp: new Date().toISOString(), data: known });
  const seconds = () => String(Math.floor(Date.now() / 1000));
  const forged = `v1,${randomBytes(32).toString("base64")}`;
  expect(
    await postEvent(receiverUrl, body, { "webhook-id": "msg_forged", "webhook-timestamp": seconds(), "webhook-signature": forged }),
  ).toBe(401);
  expect(await postEvent(receiverUrl, body, {})).toBe(401);
  const old = new Date(Date.now() - 10 * 60_000);
  const oldHeaders = {
    "webhook-id": "msg_old",
    "webhook-timestamp": String(Math.floor(old.getTime() / 1000)),
    "webhook-signature": signer.sign("msg_old", old, body),
  };
  expect(await postEvent(receiverUrl, body, oldHeaders)).toBe(401);
  const at = new Date();
  const other = new Webhook(`whsec_${randomBytes(24).toString("base64")}`);
  const rotating = `${other.sign("msg_rotating", at, body)} ${signer.sign("msg_rotating", at, body)}`;
  const rotatingHeaders = { "webhook-id": "msg_rotating", "webhook-timestamp": String(Math.floor(at.getTime() / 1000)) };
  expect(await postEvent(receiverUrl, body, { ...rotatingHeaders, "webhook-signature": rotating })).toBe(204);
  const knownAlready = /msg_rotating withdrawal\.created withdrawals\/\S+: known already/;
  await waitFor("the receiver to log a known record", () => knownAlready.test(receiver.output()), receiver.output);
  expect(ids(stored(store))).toEqual(ids(first));

  // The outage: the receiver is down while records arrive, one of them synced six hours late.
  const outageStart = new Date();
  await receiver.stop();
  const during = [withdrawal({ deliveredAt: new Date().toISOString() }), withdrawal({ deliveredAt: new Date().toISOString() })];
  const late = withdrawal({ deliveredAt: new Date(Date.now() - 6 * HOUR).toISOString() });
  await sync([...during, late]);
  const reconcileFrom = ["--api", server.url, "--key", key, "--store", store, "--since", outageStart.toISOString()];

  // A window from the start of the outage alone misses the late record: its event date is older.
  expect(await reconcile([...reconcileFrom, "--lateness", "0"])).toBe(2);
  expect(ids(stored(store))).toEqual(ids([...first, ...during]));

  // Widened by the longest lateness expected of a device, it finds it; each record is stored once.
  expect(await reconcile([...reconcileFrom, "--lateness", "24h"])).toBe(1);
  const listed = await readAllOver(server.url, key, "/v1/withdrawals");
  expect(listed).toHaveLength(6);
  const byId = (a: Record<string, unknown>, b: Record<string, unknown>) => String(a.id).localeCompare(String(b.id));
  expect(stored(store).sort(byId)).toEqual(listed.sort(byId));

  // Again: nothing new.
  const lines = readFileSync(store, "utf8");
  expect(await reconcile([...reconcileFrom, "--lateness", "24h"])).toBe(0);
  expect(readFileSync(store, "utf8")).toBe(lines);
}, 60_000);
