/**
 * Usage reports, GET /v1/usage (bench/README.md, "Usage"): `node bench/usage.mjs` runs it alone
 * (BENCH_ENGINE), `npm run bench` after the events (BENCH_USAGE=on, off, only). Per engine, a copy
 * of the usage database (bench/usage-data.mjs: 1,000,000 withdrawals over a year of the tenant's
 * zone, Europe/Berlin) served by bench/server.mjs, then one client, one request at a time:
 *
 *   1. the withdrawals list's first page (default limit) and each report's first page (limit=100)
 *      in rounds that take turns (BENCH_USAGE_ROUNDS, after one unmeasured), the figure each one's
 *      median; the budget is 20 first pages of withdrawals, and each report in the tenant's zone
 *      (where whole months are read from their totals) must take at most that; in other zones
 *      (America/New_York, Asia/Kathmandu: read from the records) each under 1,000 ms;
 *   2. a walk of every page of the year by cost center by month in the tenant's zone
 *      (BENCH_USAGE_WALKS times, the median), no target;
 *   3. with BENCH_USAGE_CHECK=on (the default) the reports' sums checked (bench/usage-check.mjs).
 */
import { randomBytes } from "node:crypto";
import { pathToFileURL } from "node:url";
import { DEFAULT_POSTGRES_URL, postgresServerInfo, settleDisk } from "./dataset.mjs";
import { startServer } from "./events-data.mjs";
import { checkUsage, request, walk } from "./usage-check.mjs";
import { USAGE_TENANT, USAGE_ZONE, YEAR, at, costCenterId, usageDatabase, usageDataSettings } from "./usage-data.mjs";
import { integerSetting } from "./windows.mjs";

const TITLES = { sqlite: "SQLite", postgres: "PostgreSQL" };
/** A report in the tenant's zone may take as long as this many first pages of withdrawals. */
const BUDGET_PAGES = 20;
const OTHER_ZONE_MS = 1000;
const ZONES = ["America/New_York", "Asia/Kathmandu"];

export const usageSettings = {
  rounds: integerSetting("BENCH_USAGE_ROUNDS", 15),
  walks: integerSetting("BENCH_USAGE_WALKS", 5),
  check: process.env.BENCH_USAGE_CHECK !== "off",
};

/** March 2026 in Berlin: 30 days and the one of 23 hours. */
const MONTH = at("2026-03-01T00:00:00+01:00", "2026-03-31T23:59:59.999+02:00");
const CC = costCenterId(0);

const REPORTS = [
  { id: "ccMonth", name: "year x cost center x month", query: `groupBy=costCenterId&interval=month&${YEAR}` },
  { id: "empDay", name: "March x employee x day", query: `groupBy=employeeId&interval=day&${MONTH}` },
  { id: "prodTotal", name: "year x product, total", query: `groupBy=productId&interval=total&${YEAR}` },
];
const OTHER_REPORTS = [
  ...REPORTS,
  { id: "ccProdMonth", name: "year x cost center, product x month", query: `groupBy=costCenterId,productId&interval=month&${YEAR}` },
  {
    id: "empWeekCc",
    name: `year x employee x week, costCenterId=${CC}`,
    query: `groupBy=employeeId&interval=week&costCenterId=${CC}&${YEAR}`,
  },
];

/** The scenarios, by id: the withdrawals page, the reports in the tenant's zone, then in each other zone. */
function scenarios() {
  const list = [{ id: "withdrawals", name: "withdrawals, first page", zone: "-", path: "/v1/withdrawals" }];
  for (const r of REPORTS) list.push({ ...r, id: `own:${r.id}`, zone: `${USAGE_ZONE} (own)`, path: `/v1/usage?${r.query}&limit=100` });
  for (const zone of ZONES)
    for (const r of OTHER_REPORTS)
      list.push({ ...r, id: `${zone}:${r.id}`, zone, path: `/v1/usage?${r.query}&timeZone=${encodeURIComponent(zone)}&limit=100` });
  return list;
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
};

/** The scenarios in rounds that take turns, one request at a time; each one's times. */
async function firstPages(target, list, log) {
  const times = Object.fromEntries(list.map((s) => [s.id, []]));
  const rows = {};
  const [withdrawals, ...reports] = list;
  const half = reports.length >> 1;
  for (let round = 0; round <= usageSettings.rounds; round += 1) {
    // The withdrawals page three times a round (first, halfway, last); every other round in reverse.
    const order = [withdrawals, ...reports.slice(0, half), withdrawals, ...reports.slice(half), withdrawals];
    if (round % 2 === 1) order.reverse();
    const took = {};
    for (const s of order) {
      const page = await request(target, s.path);
      rows[s.id] = page.data.length;
      if (round > 0) times[s.id].push(page.ms);
      took[s.id] = page.ms;
    }
    if (round === 0)
      log(`    warm-up round (not counted), rows of each first page: ${list.map((s) => `${s.id} ${rows[s.id]}`).join(", ")}`);
    else log(`    round ${round}, ms in the same order (withdrawals: its last): ${list.map((s) => took[s.id].toFixed(0)).join(" ")}`);
  }
  return { times, rows };
}

/** Both measurements, and the check, on one engine's copy. */
async function measure(engine, { postgresUrl, log }) {
  const started = performance.now();
  const data = await usageDatabase(engine, { postgresUrl, log });
  try {
    const settled = await settleDisk(engine === "postgres" ? postgresUrl : undefined);
    log(`  ${engine}: copy ready (disk settled in ${settled.toFixed(1)} s); the data built in ${data.meta.buildSeconds.toFixed(0)} s`);
    const server = await startServer(data.databaseUrl, randomBytes(32).toString("base64url"), USAGE_TENANT);
    try {
      const target = { url: server.url, key: data.key };
      const list = scenarios();
      const pages = await firstPages(target, list, log);
      const walks = [];
      let walked;
      for (let i = 0; i < usageSettings.walks; i += 1) {
        walked = await walk(target, list[1].path);
        walks.push(walked.ms);
        log(`    walk ${i + 1}: ${walked.pages} pages, ${walked.rows.length} rows in ${walked.ms.toFixed(0)} ms`);
      }
      const check = usageSettings.check
        ? await checkUsage(engine, { target, databaseUrl: data.databaseUrl, meta: data.meta, log })
        : undefined;
      return {
        data,
        list,
        pages,
        walk: { ms: median(walks), all: walks, pages: walked.pages, rows: walked.rows.length },
        check,
        seconds: (performance.now() - started) / 1000,
      };
    } finally {
      await server.stop();
    }
  } finally {
    await data.drop();
  }
}

/** One engine's table: report, zone, median ms (min to max), target, ratio, met. */
function engineTable(engine, result, missed) {
  const { list, pages, walk: walked } = result;
  const ms = (v) => v.toFixed(1);
  const spread = (id) => `${ms(median(pages.times[id]))} (${ms(Math.min(...pages.times[id]))}-${ms(Math.max(...pages.times[id]))})`;
  const reference = median(pages.times.withdrawals);
  const budget = BUDGET_PAGES * reference;
  const rows = [
    [
      "withdrawals, first page (default limit)",
      "-",
      spread("withdrawals"),
      `reference; budget ${BUDGET_PAGES}x = ${ms(budget)} ms`,
      "",
      "",
    ],
  ];
  for (const s of list.slice(1)) {
    const figure = median(pages.times[s.id]);
    const own = s.id.startsWith("own:");
    const ratio = own ? figure / budget : figure / OTHER_ZONE_MS;
    const met = own ? figure <= budget : figure < OTHER_ZONE_MS;
    if (!met) missed.push(`${TITLES[engine]} usage ${s.name} (${s.zone}): ${ms(figure)} ms`);
    const target = own ? `<= budget (${ms(budget)} ms)` : `< ${OTHER_ZONE_MS} ms`;
    const rowsNote = pages.rows[s.id] === 100 ? "" : ` [${pages.rows[s.id]} rows]`;
    rows.push([`${s.name}${rowsNote}`, s.zone, spread(s.id), target, ratio.toFixed(2), met ? "met" : "MISSED"]);
  }
  rows.push([
    `walk: year x cost center x month, ${walked.pages} pages, ${walked.rows} rows`,
    `${USAGE_ZONE} (own)`,
    ms(walked.ms),
    "none",
    "",
    "",
  ]);
  return rows;
}

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
export async function runUsageBench(engines, { postgresUrl = DEFAULT_POSTGRES_URL, log = console.log } = {}) {
  const lines = [];
  const missed = [];
  const results = {};
  const s = usageSettings;
  for (const engine of engines) {
    log(`\n[usage reports, ${TITLES[engine]}]`);
    if (engine === "postgres") {
      try {
        await postgresServerInfo(postgresUrl);
      } catch (error) {
        log(`  skipped: PostgreSQL is unreachable (${error.message})`);
        continue;
      }
    }
    try {
      const result = (results[engine] = await measure(engine, { postgresUrl, log }));
      lines.push(
        `Usage reports, ${TITLES[engine]} (bench/usage.mjs): ${usageDataSettings.rows.toLocaleString("en")} withdrawals and 5 % each of returns and exchanges ` +
          `over a year of ${USAGE_ZONE}, the tenant's zone; one client, one request at a time, the median of ${s.rounds} rounds that take turns ` +
          `(ms, min-max in brackets); first pages limit=100; the walk the median of ${s.walks}:`,
        ...tableLines(["report", "zone", "median ms", "target", "ratio", "result"], engineTable(engine, result, missed)),
      );
      if (result.check !== undefined) {
        lines.push(...result.check.lines);
        missed.push(...result.check.problems.map((p) => `${TITLES[engine]} usage check: ${p}`));
      }
      lines.push(`  ${TITLES[engine]}: ${result.seconds.toFixed(0)} s in all`, "");
    } catch (error) {
      log(`usage, ${engine}: ${error.stack ?? error}`);
      results[engine] = { error: error.message };
      lines.push(`Usage reports, ${TITLES[engine]}: not measured (${error.message})`);
      missed.push(`${TITLES[engine]} usage: not measured (${error.message})`);
    }
  }
  return { lines, missed, results };
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const raw = process.env.BENCH_ENGINE || "all";
  const engines = raw === "all" ? ["sqlite", "postgres"] : [raw];
  if (!engines.every((e) => e in TITLES)) throw new Error(`BENCH_ENGINE must be all, sqlite or postgres, got "${raw}"`);
  const started = performance.now();
  const { lines, missed, results } = await runUsageBench(engines, { postgresUrl: process.env.BENCH_POSTGRES_URL || DEFAULT_POSTGRES_URL });
  console.log("");
  for (const line of lines) console.log(line);
  console.log(`Run time: ${((performance.now() - started) / 1000).toFixed(0)} s.`);
  console.log(missed.length === 0 ? "All targets met." : `MISSED: ${missed.join("; ")}`);
  if (Object.values(results).some((r) => r.error !== undefined)) process.exitCode = 1;
}
