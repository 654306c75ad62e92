/**
 * The events list and the events' retention (bench/README.md, "Events"): `node bench/events.mjs`
 * runs it alone (BENCH_ENGINE), `npm run bench` after the time windows (BENCH_EVENTS=on, off,
 * only). Per engine, a database of its own (bench/events-data.mjs: the demo tenant, 1,000,000
 * expired events and the recent ones) served by bench/server.mjs with BENCH_SWEEP=on, then:
 *
 *   1. pages: the events list's first page, one type's and one with a cursor deep in the
 *      events, against the withdrawals list's first page, in rounds that take turns (autocannon,
 *      as run.mjs), each target events / withdrawals >= 0.9;
 *   2. pruning: one sender's 1,000-record sync batches without pruning, then while the sweeper
 *      deletes the expired events (POST /bench/sweep), then without again; the target is the
 *      rate while pruning over the rate without (before and after together) >= 0.8, and every
 *      expired event deleted.
 */
import { randomBytes } from "node:crypto";
import { setImmediate as nextTurn } from "node:timers/promises";
import { pathToFileURL } from "node:url";
import autocannon from "autocannon";
import { CursorCodec } from "../dist/platform/cursor.js";
import { DEFAULT_POSTGRES_URL, postgresServerInfo, syncBodies } from "./dataset.mjs";
import { eventsBefore, eventsDatabase, startServer } from "./events-data.mjs";
import { integerSetting } from "./windows.mjs";

const DAY = 86_400_000;
const TITLES = { sqlite: "SQLite", postgres: "PostgreSQL" };
const TARGETS = { page: 0.9, pruning: 0.8 };
/** The type of the filtered page: master data, a payload each, a tenth of the recent events. */
const TYPE = "employee.updated";

export const eventsSettings = {
  scale: integerSetting("BENCH_EVENTS_SCALE", 10),
  expired: integerSetting("BENCH_EVENTS_EXPIRED", 1_000_000),
  /** Seconds of sync before the pruning and again after it, each. */
  syncSeconds: integerSetting("BENCH_EVENTS_SYNC_SECONDS", 10),
  // The page load as run.mjs's, from the same settings.
  duration: integerSetting("BENCH_DURATION", 12),
  rounds: integerSetting("BENCH_ROUNDS", 4),
  warmup: Number(process.env.BENCH_WARMUP || 2),
  connections: integerSetting("BENCH_CONNECTIONS", 10),
};

const thousands = (n) => Math.round(n).toLocaleString("en");

function cannon(options) {
  return new Promise((done, fail) => autocannon(options, (error, result) => (error ? fail(error) : done(result))));
}

/** Loads GET `path` with every connection for `seconds` (after `warmup` unmeasured); requests, seconds and failures. */
async function loadPage(target, path, seconds, warmup) {
  const options = { url: target.url + path, connections: eventsSettings.connections, headers: { authorization: `Bearer ${target.key}` } };
  if (warmup > 0) await cannon({ ...options, duration: warmup });
  const started = performance.now();
  const result = await cannon({ ...options, duration: seconds });
  const failures = [];
  if (result.non2xx > 0) failures.push(`${result.non2xx} non-2xx`);
  if (result.errors + result.timeouts > 0) failures.push(`${result.errors} errors, ${result.timeouts} timeouts`);
  return { requests: result["2xx"], seconds: (performance.now() - started) / 1000, failures };
}

/** The page scenarios in rounds that take turns: each one's requests a second over all its rounds. */
async function pages(target, paths, log) {
  for (const [name, path] of Object.entries(paths)) {
    const response = await fetch(target.url + path, { headers: { authorization: `Bearer ${target.key}` } });
    const text = await response.text();
    if (response.status !== 200 || JSON.parse(text).data?.length !== 20)
      throw new Error(`${name}: GET ${path} answered ${response.status}, not 20 items`);
  }
  const { duration, rounds, warmup } = eventsSettings;
  const runs = Object.fromEntries(Object.keys(paths).map((name) => [name, []]));
  for (let round = 0; round < rounds; round += 1) {
    // Every other round in the opposite order: no page is always the one loaded right after another.
    const order = round % 2 === 0 ? Object.entries(paths) : Object.entries(paths).reverse();
    for (const [name, path] of order) runs[name].push(await loadPage(target, path, duration / rounds, round === 0 ? warmup : 0));
    log(
      `    pages, round ${round + 1} of ${rounds}: ${Object.entries(runs)
        .map(([name, r]) => `${name} ${thousands(r[round].requests / r[round].seconds)}`)
        .join(", ")} req/s`,
    );
  }
  const sum = (list, key) => list.reduce((total, r) => total + r[key], 0);
  return Object.fromEntries(
    Object.entries(runs).map(([name, list]) => [
      name,
      { perSecond: sum(list, "requests") / sum(list, "seconds"), failures: list.flatMap((r) => r.failures) },
    ]),
  );
}

/**
 * One sender's batches back to back until `done()` says so, each body made while the one
 * before is served; records a second over the phase, and the batches' median and p99 in ms.
 */
async function syncWhile(target, nextBody, done) {
  const latencies = [];
  const started = performance.now();
  let body = nextBody();
  while (!done()) {
    const sent = performance.now();
    const answer = fetch(`${target.url}/v1/sync/withdrawals`, {
      method: "POST",
      headers: { authorization: `Bearer ${target.key}`, "content-type": "application/json" },
      body,
    });
    await nextTurn();
    body = nextBody();
    const response = await answer;
    const text = await response.text();
    if (response.status !== 200) throw new Error(`sync answered ${response.status}: ${text.slice(0, 300)}`);
    latencies.push(performance.now() - sent);
  }
  const seconds = (performance.now() - started) / 1000;
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? NaN;
  return { batches: latencies.length, seconds, perSecond: (latencies.length * 1000) / seconds, p50: at(0.5), p99: at(0.99) };
}

/** Sync without pruning, while the sweeper prunes, and without again; the sweep's own answer. */
async function pruning(target, templates, log) {
  const stamp = randomBytes(4).toString("hex");
  let batch = 0;
  const nextBody = () => syncBodies(templates, { count: 1, stamp, first: batch++ })[0];
  const { syncSeconds } = eventsSettings;
  const forSeconds = (seconds) => {
    const end = performance.now() + seconds * 1000;
    return () => performance.now() >= end;
  };
  // Not counted: a server's first batches compile its statements and, on SQLite, grow its WAL
  // up to where it is checkpointed (256 MiB, about 35 batches), which costs more than the
  // overwrites that follow.
  await syncWhile(target, nextBody, forSeconds(5));
  const before = await syncWhile(target, nextBody, forSeconds(syncSeconds));
  let swept;
  const sweep = fetch(`${target.url}/bench/sweep`, { method: "POST" })
    .then(async (response) => {
      if (response.status !== 200) throw new Error(`POST /bench/sweep answered ${response.status}: ${await response.text()}`);
      return response.json();
    })
    .then((result) => (swept = result));
  const during = await syncWhile(target, nextBody, () => swept !== undefined);
  await sweep;
  const after = await syncWhile(target, nextBody, forSeconds(syncSeconds));
  const without = { perSecond: ((before.batches + after.batches) * 1000) / (before.seconds + after.seconds) };
  log(
    `    sync: ${thousands(before.perSecond)} records/s before, ${thousands(during.perSecond)} while pruning (${during.batches} batches), ` +
      `${thousands(after.perSecond)} after; batches' p50 / p99: ${[before, during, after].map((r) => `${r.p50.toFixed(0)} / ${r.p99.toFixed(0)} ms`).join(", ")}`,
  );
  return { before, during, after, without, swept };
}

/** Both scenarios on one engine's own database. */
async function measure(engine, { postgresUrl, log }) {
  const started = performance.now();
  const { scale, expired } = eventsSettings;
  const data = await eventsDatabase(engine, { postgresUrl, scale, expired, log });
  try {
    const cursorSecret = randomBytes(32).toString("base64url");
    const server = await startServer(data.databaseUrl, cursorSecret);
    try {
      const target = { url: server.url, key: data.key };
      const codec = new CursorCodec(cursorSecret);
      const deep = codec.encode(data.tenantId, "events", "[]", data.deep.position);
      const deepWithdrawal = codec.encode(data.tenantId, "withdrawals", "[]", data.deepWithdrawal);
      const page = await pages(
        target,
        {
          withdrawals: "/v1/withdrawals?limit=20",
          events: "/v1/events?limit=20",
          type: `/v1/events?limit=20&type=${TYPE}`,
          deep: `/v1/events?limit=20&cursor=${encodeURIComponent(deep)}`,
          withdrawalsDeep: `/v1/withdrawals?limit=20&cursor=${encodeURIComponent(deepWithdrawal)}`,
        },
        log,
      );
      const pruned = await pruning(target, data.templates, log);
      const left = await eventsBefore(engine, data.databaseUrl, data.tenantId, Date.now() - 30 * DAY);
      return { data, page, pruned, left, seconds: (performance.now() - started) / 1000 };
    } finally {
      await server.stop();
    }
  } finally {
    await data.drop();
  }
}

/** The section's table, a column per engine, and what was missed. */
function report(engines, results) {
  const missed = [];
  // A row: its name, its target and a cell per engine, `format(result)` giving [text, ratio or met, target] or a text.
  const row = (name, target, format) => [
    name,
    target,
    ...engines.map((engine) => {
      if (results[engine].error !== undefined) return "error";
      const [text, judged, min] = [format(results[engine])].flat();
      if (judged === undefined) return text;
      const met = typeof judged === "boolean" ? judged : judged >= min;
      if (!met) missed.push(`${TITLES[engine]} ${name}: ${typeof judged === "boolean" ? text : `${judged.toFixed(2)} (target >= ${min})`}`);
      return `${text}${typeof judged === "boolean" ? "" : `, ${judged.toFixed(2)}`} ${met ? "met" : "MISSED"}`;
    }),
  ];
  const pageRow = (name, id, reference = "withdrawals") =>
    row(name, `≥ ${TARGETS.page} × ${reference === "withdrawals" ? "withdrawals" : "withdrawals as deep"}`, ({ page }) => [
      `${thousands(page[id].perSecond)} req/s${page[id].failures.length > 0 ? ` (${page[id].failures.join(", ")})` : ""}`,
      page[id].failures.length > 0 ? 0 : page[id].perSecond / page[reference].perSecond,
      TARGETS.page,
    ]);
  const expired = thousands(eventsSettings.expired);
  const rows = [
    row("withdrawals, first page", "reference", ({ page }) => `${thousands(page.withdrawals.perSecond)} req/s`),
    pageRow("events, first page", "events"),
    pageRow(`events, type=${TYPE}`, "type"),
    row("withdrawals, cursor as deep", "reference", ({ page }) => `${thousands(page.withdrawalsDeep.perSecond)} req/s`),
    pageRow("events, cursor halfway down", "deep", "withdrawalsDeep"),
    row("sync, 1 sender, not pruning", "reference", ({ pruned }) => `${thousands(pruned.without.perSecond)} records/s`),
    row(`sync, 1 sender, while pruning ${expired}`, `≥ ${TARGETS.pruning} × not pruning`, ({ pruned: { during, without } }) => [
      `${thousands(during.perSecond)} records/s`,
      during.perSecond / without.perSecond,
      TARGETS.pruning,
    ]),
    row(`pruning ${expired} expired events`, "all deleted", ({ pruned: { swept }, left }) => [
      `${swept.seconds.toFixed(1)} s, ${thousands(swept.pruned.messages)} deleted, ${left} left`,
      swept.pruned.messages === eventsSettings.expired && left === 0,
    ]),
  ];
  for (const engine of engines)
    if (results[engine].error !== undefined) missed.push(`${TITLES[engine]} events: not measured (${results[engine].error})`);
  return { rows, missed };
}

/** A Markdown table's lines, the first two columns left-aligned. */
function tableLines(titles, rows) {
  const widths = titles.map((title, i) => Math.max(title.length, ...rows.map((r) => String(r[i]).length)));
  const cell = (text, i) => (i < 2 ? String(text).padEnd(widths[i]) : String(text).padStart(widths[i]));
  return [
    `| ${titles.map(cell).join(" | ")} |`,
    `|${widths.map((w, i) => (i < 2 ? "-".repeat(w + 2) : `${"-".repeat(w + 1)}:`)).join("|")}|`,
    ...rows.map((row) => `| ${row.map(cell).join(" | ")} |`),
  ];
}

/** The section on each engine in turn; resolves with the report's lines and the missed targets. */
export async function runEventsBench(engines, { postgresUrl = DEFAULT_POSTGRES_URL, log = console.log } = {}) {
  const results = {};
  const shown = [];
  for (const engine of engines) {
    log(`\n[events, ${TITLES[engine]}]`);
    if (engine === "postgres") {
      try {
        await postgresServerInfo(postgresUrl);
      } catch (error) {
        log(`  skipped: PostgreSQL is unreachable (${error.message})`);
        continue;
      }
    }
    shown.push(engine);
    try {
      results[engine] = await measure(engine, { postgresUrl, log });
    } catch (error) {
      log(`events, ${engine}: ${error.stack ?? error}`);
      results[engine] = { error: error.message };
    }
  }
  const { rows, missed } = report(shown, results);
  const s = eventsSettings;
  const lines = [
    `Events (bench/events.mjs): per engine a new database (cribline demo --scale ${s.scale}), ${thousands(s.expired)} expired events ` +
      `and the recent ones, served by bench/server.mjs; pages: ${s.connections} connections, ${s.duration} s each in ${s.rounds} rounds ` +
      `that take turns; sync: 1 sender, ${s.syncSeconds} s before the pruning and ${s.syncSeconds} s after it:`,
    ...tableLines(["scenario", "target", ...shown.map((e) => TITLES[e])], rows),
  ];
  for (const engine of shown.filter((e) => results[e].error === undefined)) {
    const { data, pruned: p, seconds } = results[engine];
    lines.push(
      `  ${TITLES[engine]}: ${thousands(data.withdrawals)} withdrawals, ${thousands(data.recent)} recent events (${data.recentTypes}), ` +
        `the deep cursor ${thousands(data.deep.offset)} events down; ` +
        `sync ${thousands(p.before.perSecond)} / ${thousands(p.during.perSecond)} / ${thousands(p.after.perSecond)} records/s before / while / after pruning ` +
        `(${p.during.batches} batches while pruning); ${seconds.toFixed(0)} s in all`,
    );
  }
  return { lines, missed, results };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const raw = process.env.BENCH_ENGINE || "all";
  const engines = raw === "all" ? ["sqlite", "postgres"] : [raw];
  if (!engines.every((e) => e in TITLES)) throw new Error(`BENCH_ENGINE must be all, sqlite or postgres, got "${raw}"`);
  const started = performance.now();
  const { lines, missed, results } = await runEventsBench(engines, { postgresUrl: process.env.BENCH_POSTGRES_URL || DEFAULT_POSTGRES_URL });
  console.log("");
  for (const line of lines) console.log(line);
  console.log(`Run time: ${((performance.now() - started) / 1000).toFixed(0)} s.`);
  console.log(missed.length === 0 ? "All targets met." : `MISSED: ${missed.join("; ")}`);
  if (Object.values(results).some((r) => r.error !== undefined)) process.exitCode = 1;
}
