#!/usr/bin/env node
/**
 * An example cribline integrator, in Node.js (20.3 or later), on cribline's TypeScript client
 * (client/, `@cribline/client`; in this repository `npm run build` builds it into
 * client/dist). See docs/webhooks.md for the guide this belongs to.
 *
 *   node examples/webhook-client.mjs receive   --secret whsec_... --store store.jsonl [--port 4000]
 *   node examples/webhook-client.mjs reconcile --api http://localhost:3000 --key crib_... \
 *        --store store.jsonl --since 2026-11-22T08:00:00Z [--lateness 72h] [--until <time>]
 *   node examples/webhook-client.mjs --help     (every flag, with its default and environment variable)
 *
 * `receive` is the webhook endpoint: it checks each request's Standard Webhooks signature,
 * de-duplicates on `webhook-id`, and records every record it learns of in the store.
 * `reconcile` re-reads a time window through the read API and adds to the store what the
 * webhooks missed (an outage of this receiver, an endpoint that was disabled, ...).
 *
 * The store is a JSON-lines file that survives restarts, one line per webhook-id seen and
 * one per record (by collection and id). A real integration would use its own database, with
 * unique keys on the webhook-id and on (collection, id) instead.
 *
 * Every flag can also come from the environment: CRIBLINE_API_URL, CRIBLINE_API_KEY,
 * CRIBLINE_WEBHOOK_SECRET, RECEIVER_PORT, RECEIVER_HOST, STORE_FILE.
 */
import { appendFileSync, closeSync, openSync, readFileSync, readSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { parseArgs } from "node:util";

const MAX_BODY_BYTES = 1024 * 1024; // an event is a few KiB at most
// The lists with an event date, which a time window can re-read; master data has none.
const TRANSACTION_LISTS = ["withdrawals", "returns", "exchanges", "training-records"];

const log = (mode, line) => console.log(`[${mode}] ${line}`);

// ---------------------------------------------------------------------------------------
// The store. Two processes may share it (`receive` running, `reconcile` from cron): before
// deciding whether something is new, each reads what the other appended since it last looked.

function openStore(file) {
  const webhookIds = new Set();
  const records = new Map(); // "collection/id" -> version (updatedAt for master data, else createdAt)
  let offset = 0;

  function refresh() {
    let size;
    try {
      size = statSync(file).size;
    } catch {
      return; // no file yet: nothing stored
    }
    if (size <= offset) return;
    const buffer = Buffer.alloc(size - offset);
    const fd = openSync(file, "r");
    try {
      readSync(fd, buffer, 0, buffer.length, offset);
    } finally {
      closeSync(fd);
    }
    const end = buffer.lastIndexOf(10) + 1; // whole lines only
    offset += end;
    for (const line of buffer.subarray(0, end).toString("utf8").split("\n")) {
      if (line === "") continue;
      const entry = JSON.parse(line);
      if (entry.webhookId !== undefined) webhookIds.add(entry.webhookId);
      else records.set(`${entry.collection}/${entry.id}`, entry.version);
    }
  }

  function append(entry) {
    appendFileSync(file, JSON.stringify(entry) + "\n"); // written before the request is answered
    refresh();
  }

  refresh();
  return {
    get size() {
      return records.size;
    },
    seenWebhook(id) {
      refresh();
      return webhookIds.has(id);
    },
    markWebhook(id) {
      append({ webhookId: id, at: new Date().toISOString() });
    },
    /** Stores a record unless this version of it is known already; true when it was new. */
    remember(collection, record, via) {
      refresh();
      const version = record.updatedAt ?? record.createdAt;
      const known = records.get(`${collection}/${record.id}`);
      if (known !== undefined && known >= version) return false;
      append({ collection, id: record.id, version, via, record });
      return true;
    },
  };
}

// ---------------------------------------------------------------------------------------
// receive

function receive({ secret, store: file, port, host }, { verifyWebhook }) {
  if (!secret?.startsWith("whsec_")) fail("--secret whsec_... (or CRIBLINE_WEBHOOK_SECRET) is required");
  if (!/^\d{1,5}$/.test(port) || Number(port) > 65535) fail(`--port must be a port number (0 to 65535); got ${port}`);
  const store = openStore(file);

  const server = createServer((req, res) => {
    const answer = (status, line) => {
      log("receive", line);
      res.writeHead(status).end();
    };
    if (req.method !== "POST") return answer(405, `refused ${req.method} ${req.url}: webhooks are POSTs (405)`);
    const chunks = [];
    let bytes = 0;
    req.on("data", (chunk) => {
      bytes += chunk.length;
      if (bytes <= MAX_BODY_BYTES) chunks.push(chunk);
    });
    req.on("end", async () => {
      if (bytes > MAX_BODY_BYTES) return answer(413, `refused a body of ${bytes} bytes (413)`);
      // The signature (Standard Webhooks: both secrets during a rotation, a timestamp within
      // 5 minutes) is checked on the body's raw bytes: parsing and re-serialising would change them.
      let event;
      try {
        event = await verifyWebhook({ secret, headers: req.headers, body: Buffer.concat(chunks) });
      } catch (error) {
        return answer(401, `refused ${req.headers["webhook-id"] ?? "a request"}: ${error.message} (401)`);
      }
      const id = req.headers["webhook-id"];
      // The same webhook-id comes again on every retry and replay: answer 2xx, do nothing.
      if (store.seenWebhook(id)) return answer(204, `${id} again: duplicate, ignored`);
      if (typeof event?.type !== "string" || typeof event.data?.id !== "string") return answer(400, `refused ${id}: not an event (400)`);
      // "withdrawal.created" -> "withdrawals", "cost-center.updated" -> "cost-centers", ...
      const collection = `${event.type.split(".")[0]}s`;
      try {
        // A record can be known already: from reconcile, or from another event with its data.
        const stored = store.remember(collection, event.data, "webhook");
        store.markWebhook(id); // after the record: a crash in between makes the retry find it
        // Answer quickly (cribline waits 15 s at most); do anything slow after answering.
        answer(204, `${id} ${event.type} ${collection}/${event.data.id}: ${stored ? "stored" : "known already"}`);
      } catch (error) {
        answer(500, `could not store ${id}: ${error.message} (500: cribline sends it again later)`);
      }
    });
  });

  server.on("error", (error) => fail(error.code === "EADDRINUSE" ? `${host}:${port} is in use: choose another --port` : error.message));
  server.listen(Number(port), host, () => {
    const { port: actual } = server.address();
    log("receive", `listening on http://${host}:${actual} (store ${file}: ${store.size} records)`);
  });
  for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => server.close(() => process.exit(0)));
}

// ---------------------------------------------------------------------------------------
// reconcile

async function reconcile({ api, key, store: file, since, lateness, until, collections }, { CriblineClient, ListResource }) {
  if (!api || !key) fail("--api <base URL> and --key crib_... (or CRIBLINE_API_URL, CRIBLINE_API_KEY) are required");
  if (since === undefined) fail("--since is required: when the outage began (a date-time, or a duration ago such as 24h)");
  const store = openStore(file);
  // The window matches the event date (deliveredAt, completedAt), not the time of sync. A
  // record a device syncs during the outage can have an event date long before it began, so
  // the window starts the longest lateness expected of a device before the outage.
  const from = new Date(timeOf(since) - durationOf(lateness));
  const to = until === undefined ? new Date() : new Date(timeOf(until));
  // The client pages, retries a 429 or 503 after its Retry-After, and limits each request's time.
  const client = new CriblineClient({ baseUrl: api, apiKey: key });
  let read = 0;
  let missed = 0;
  for (const collection of collections.split(",")) {
    const windowed = TRANSACTION_LISTS.includes(collection);
    let listRead = 0;
    let listMissed = 0;
    const filters = windowed ? { createdSince: from.toISOString(), createdUntil: to.toISOString() } : {};
    for await (const record of new ListResource(client, collection).list(filters)) {
      listRead += 1;
      if (store.remember(collection, record, "reconcile")) listMissed += 1;
    }
    const scope = windowed ? `event dates ${from.toISOString()} to ${to.toISOString()}` : "the whole list (master data has no event date)";
    log("reconcile", `${collection}, ${scope}: ${listRead} read, ${listMissed} missed by webhooks`);
    read += listRead;
    missed += listMissed;
  }
  log("reconcile", `done: ${read} ${read === 1 ? "record" : "records"} read, ${missed} missed by webhooks and added to ${file}`);
}

// ---------------------------------------------------------------------------------------
// Command line

/** "90s", "30m", "72h", "7d" or "0", in milliseconds. */
function durationOf(text) {
  const match = /^(\d+)([smhd]?)$/.exec(text);
  if (match === null || (match[2] === "" && match[1] !== "0")) fail(`not a duration: ${text} (use 90s, 30m, 72h, 7d or 0)`);
  return Number(match[1]) * { "": 0, s: 1e3, m: 60e3, h: 3600e3, d: 86400e3 }[match[2]];
}

/** A date-time with time and zone (2026-11-22T08:00:00Z), or a duration meaning that long ago. */
function timeOf(text) {
  if (/^\d+[smhd]$/.test(text)) return Date.now() - durationOf(text);
  const ms = /^\d{4}-\d\d-\d\dT\d\d:\d\d(:\d\d(\.\d+)?)?(Z|[+-]\d\d:\d\d)$/i.test(text) ? Date.parse(text) : NaN;
  if (Number.isNaN(ms)) fail(`not a date-time with time and zone, nor a duration: ${text}`);
  return ms;
}

/** The client (client/dist), loaded for a command only: --help and --version work before a build. */
async function loadClient() {
  try {
    return await import("../client/dist/index.js");
  } catch (error) {
    if (error.code === "ERR_MODULE_NOT_FOUND") fail("the client is not built (client/dist): run `npm run build` first");
    throw error;
  }
}

function fail(message) {
  console.error(`webhook-client: ${message}`);
  process.exit(2);
}

const USAGE = `usage: node examples/webhook-client.mjs <command> [flags]   (see docs/webhooks.md)

commands:
  receive     the webhook endpoint: verifies each request, de-duplicates it and stores its record
  reconcile   re-reads a time window through the read API and stores what the webhooks missed

flags (each can come from the environment variable in brackets instead):
  --secret whsec_...       receive: the endpoint's signing secret [CRIBLINE_WEBHOOK_SECRET]
  --port 4000              receive: port to listen on [RECEIVER_PORT]
  --host 127.0.0.1         receive: address to listen on [RECEIVER_HOST]
  --api <url>              reconcile: cribline's base URL, http://localhost:3000 unless given [CRIBLINE_API_URL]
  --key crib_...           reconcile: an API key with the read scope [CRIBLINE_API_KEY]
  --since <time>           reconcile: when the outage began: a date-time with zone, or a duration ago (24h)
  --lateness 72h           reconcile: the longest a device may sync late (90s, 30m, 72h, 7d; 0 for none)
  --until <time>           reconcile: the end of the window, now unless given
  --collections <lists>    reconcile: the lists to read, comma-separated (${TRANSACTION_LISTS.join(",")} unless given)
  --store <file>           both: the JSON-lines store, cribline-store.jsonl unless given [STORE_FILE]
  --help, --version`;

const env = process.env;
let parsed;
try {
  parsed = parseArgs({
    allowPositionals: true,
    options: {
      api: { type: "string", default: env.CRIBLINE_API_URL ?? "http://localhost:3000" },
      key: { type: "string", default: env.CRIBLINE_API_KEY },
      secret: { type: "string", default: env.CRIBLINE_WEBHOOK_SECRET },
      port: { type: "string", default: env.RECEIVER_PORT ?? "4000" },
      host: { type: "string", default: env.RECEIVER_HOST ?? "127.0.0.1" },
      store: { type: "string", default: env.STORE_FILE ?? "cribline-store.jsonl" },
      collections: { type: "string", default: TRANSACTION_LISTS.join(",") },
      since: { type: "string" },
      lateness: { type: "string", default: "72h" },
      until: { type: "string" },
      help: { type: "boolean", short: "h" },
      version: { type: "boolean" },
    },
  });
} catch (error) {
  // parseArgs explains an unknown flag at length (positionals after "--"): the flag is what matters.
  const flag = error.code === "ERR_PARSE_ARGS_UNKNOWN_OPTION" ? /'([^']+)'/.exec(error.message)?.[1] : undefined;
  fail(`${flag === undefined ? error.message : `unknown flag ${flag}`} (see --help)`);
}
const { positionals, values } = parsed;

if (values.help) {
  console.log(USAGE);
  process.exit(0);
}
if (values.version) {
  const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));
  console.log(`webhook-client.mjs (cribline ${version})`);
  process.exit(0);
}
const [mode, ...rest] = positionals;
if (rest.length > 0) fail(`unexpected argument ${JSON.stringify(rest[0])} (see --help)`);
try {
  if (mode === "receive") receive(values, await loadClient());
  else if (mode === "reconcile") await reconcile(values, await loadClient());
  else
    fail(`${mode === undefined ? "no command given" : `unknown command ${JSON.stringify(mode)}`}: use receive or reconcile (see --help)`);
} catch (error) {
  fail(error.message);
}
