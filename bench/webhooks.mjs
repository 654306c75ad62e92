/**
 * The webhook scenarios' side of the driver: the receivers (bench/receiver.mjs, a child
 * process), endpoints made and removed through the admin API as a tenant's admin would, and
 * the delay from a sync's acknowledgement to its event reaching a receiver.
 *
 * Endpoints exist only while a scenario needs them: deleting one deletes its deliveries too
 * (src/webhooks/endpoint.repository.ts), so an undelivered backlog never reaches a later
 * scenario. The server must run with CRIBLINE_WEBHOOKS_ALLOW_PRIVATE=true (the receivers are
 * on loopback) and its delivery loop, as every `cribline serve` process does.
 */
import { fork } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
export const WEBHOOK_EVENT = "withdrawal.created";

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));

/**
 * Forks bench/receiver.mjs with `count` receivers; resolves once they listen, with their
 * urls, `take()` (the events received since the last take) and `stop()`.
 */
export function startReceivers(count) {
  const child = fork(join(HERE, "receiver.mjs"), [String(count)], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const exited = new Promise((done) => child.once("exit", done));
  const waiting = [];
  child.on("message", (message) => waiting.shift()?.(message));
  const next = () => new Promise((done) => waiting.push(done));
  return new Promise((resolvePromise, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      reject(new Error("the webhook receivers did not start within 10 s"));
    }, 10_000);
    exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`the webhook receivers exited before listening (${code})`));
    });
    next().then(({ urls }) => {
      clearTimeout(timer);
      resolvePromise({
        urls,
        pid: child.pid,
        take() {
          if (!child.connected) return Promise.reject(new Error("the webhook receivers are gone"));
          const answer = next();
          child.send("take");
          // A receiver process that dies would otherwise leave the answer waiting for ever.
          return Promise.race([answer, exited.then((code) => Promise.reject(new Error(`the webhook receivers exited (${code})`)))]);
        },
        async stop() {
          if (child.connected) child.disconnect();
          if ((await Promise.race([exited, sleep(5000).then(() => "late")])) === "late") child.kill("SIGKILL");
        },
      });
    });
  });
}

async function api(target, method, path, body) {
  const response = await fetch(target.baseUrl + path, {
    method,
    headers: { authorization: `Bearer ${target.key}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, text };
}

/** Subscribes one endpoint per url to WEBHOOK_EVENT; returns their ids. */
async function createEndpoints(target, urls) {
  const ids = [];
  for (const url of urls) {
    const { status, text } = await api(target, "POST", "/v1/webhook-endpoints", { url, events: [WEBHOOK_EVENT] });
    if (status !== 201) {
      const hint =
        status === 403
          ? " (the bench key needs the admin scope)"
          : status === 400
            ? " (loopback URLs need CRIBLINE_WEBHOOKS_ALLOW_PRIVATE)"
            : "";
      throw new Error(`POST /v1/webhook-endpoints: ${status}${hint} ${text.slice(0, 300)}`);
    }
    ids.push(JSON.parse(text).id);
  }
  return ids;
}

/** Tries per endpoint to delete: a 503 says to retry shortly (a lock wait that timed out, say). */
const DELETE_TRIES = 3;

/** Deletes the endpoints, with their deliveries still pending; tries every one, then throws if any is left. */
async function deleteEndpoints(target, ids) {
  const left = [];
  for (const id of ids) {
    for (let tries = 1; ; tries++) {
      const { status, text } = await api(target, "DELETE", `/v1/webhook-endpoints/${encodeURIComponent(id)}`);
      if (status === 204 || status === 404) break;
      if (status === 503 && tries < DELETE_TRIES) {
        await sleep(1000);
        continue;
      }
      left.push(`DELETE ${id}: ${status} after ${tries} tries, ${text.slice(0, 200)}`);
      break;
    }
  }
  if (left.length > 0) throw new Error(`${left.length} of ${ids.length} webhook endpoints could not be deleted (${left[0]})`);
}

/**
 * Runs `work` with one endpoint per url subscribed and no other (any left by an earlier
 * scenario is deleted first), and deletes them afterwards whatever happens; a failed deletion
 * is one of the result's failures (or, when `work` threw, gives way to its error).
 */
export async function withEndpoints(target, urls, work) {
  await deleteLeftoverEndpoints(target);
  const ids = await createEndpoints(target, urls);
  let result;
  try {
    result = await work(ids);
  } finally {
    const deleted = deleteEndpoints(target, ids);
    await (result === undefined ? deleted.catch(() => undefined) : deleted.catch((error) => result.failures.push(error.message)));
  }
  return result;
}

/**
 * Deletes whatever endpoint the tenant still has (one an earlier scenario could not delete):
 * a scenario must not run behind another's backlog. Throws when some cannot be deleted.
 */
async function deleteLeftoverEndpoints(target) {
  const { status, text } = await api(target, "GET", "/v1/webhook-endpoints?limit=100");
  if (status !== 200) throw new Error(`GET /v1/webhook-endpoints: ${status} ${text.slice(0, 300)}`);
  const ids = JSON.parse(text).data.map((endpoint) => endpoint.id);
  if (ids.length === 0) return;
  process.stdout.write(` (first deleting ${ids.length} endpoint(s) left by an earlier scenario)`);
  await deleteEndpoints(target, ids);
}

/**
 * Takes the receivers' events every 100 ms, adding them to `into`, until `done(into)` or
 * `timeoutMs` has passed; returns whether `done` was reached.
 */
export async function collectArrivals(receivers, into, done, timeoutMs) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const { arrivals, malformed } = await receivers.take();
    into.push(...arrivals);
    if (malformed > 0) throw new Error(`${malformed} webhook request(s) without a JSON body with data.id`);
    if (done(into)) return true;
    if (Date.now() >= until) return false;
    await sleep(100);
  }
}

/**
 * Sends `bodies` (single-record syncs) one every 1000/`rate` ms, whatever the answers (an
 * open loop, as devices send), and stamps each acknowledgement (the 200 received) with
 * Date.now(); then waits until every acknowledged record's event has reached a receiver,
 * or `waitMs` after the last acknowledgement. The delay is arrival minus acknowledgement,
 * matched by record id; both stamps come from the same system clock.
 */
export async function measureDelay(target, receivers, bodies, { rate, waitMs }) {
  const ids = bodies.map((body) => JSON.parse(body).data[0].id);
  const acks = new Map();
  const refused = [];
  const send = async (body, id) => {
    const response = await fetch(`${target.baseUrl}/v1/sync/withdrawals`, {
      method: "POST",
      headers: { authorization: `Bearer ${target.key}`, "content-type": "application/json" },
      body,
    });
    const at = Date.now();
    const text = await response.text();
    if (response.status === 200) acks.set(id, at);
    else refused.push(`${response.status} ${text.slice(0, 200)}`);
  };
  const started = performance.now();
  const sends = [];
  for (let i = 0; i < bodies.length; i++) {
    await sleep(started + (i * 1000) / rate - performance.now());
    sends.push(send(bodies[i], ids[i]).catch((error) => refused.push(error.message)));
  }
  await Promise.all(sends);
  const sendSeconds = (performance.now() - started) / 1000;

  const arrivals = [];
  const first = new Map();
  const complete = (all) => {
    for (const a of all) if (acks.has(a.id) && !first.has(a.id)) first.set(a.id, a.at);
    return first.size === acks.size;
  };
  await collectArrivals(receivers, arrivals, complete, waitMs);
  const delays = [...first].map(([id, at]) => at - acks.get(id)).sort((a, b) => a - b);
  const missing = acks.size - first.size;
  const duplicates = arrivals.filter((a) => acks.has(a.id)).length - first.size;
  const failures = [];
  if (refused.length > 0) failures.push(`${refused.length} of ${bodies.length} syncs not acknowledged (first: ${refused[0]})`);
  if (missing > 0) failures.push(`${missing} of ${acks.size} events not received within ${waitMs / 1000} s of the last acknowledgement`);
  if (delays.length === 0) failures.push("no event received");
  return {
    events: bodies.length,
    acknowledged: acks.size,
    received: first.size,
    missing,
    duplicates,
    sendSeconds,
    p50: percentile(delays, 0.5),
    p99: percentile(delays, 0.99),
    min: delays[0],
    max: delays[delays.length - 1],
    failures,
  };
}

/** Nearest-rank percentile of sorted values; undefined for none. */
function percentile(sorted, p) {
  return sorted.length === 0 ? undefined : sorted[Math.max(0, Math.ceil(p * sorted.length) - 1)];
}
