/**
 * The console (bench/README.md, "Console"):
 *
 *   npm run build && node bench/console.mjs [base revision]
 *
 *   1. size: the JavaScript and CSS the first page loads, gzip-compressed as a server would
 *      send them; target under 150 KB;
 *   2. drawing: in Debian's `chromium` (playwright-core), signed in to a server with the demo's
 *      year of data, the withdrawals walked 50 pages forward; for each page, the time from its
 *      API answer's body read to the frame after the table shows it; target under 100 ms;
 *   3. the API with the console served: the withdrawals' first page against this build's server
 *      and against the base revision's (before the console; BENCH_CONSOLE_BASE or the argument),
 *      each with its own demo database, in rounds that take turns (autocannon); target this
 *      build's requests a second at least 0.95 of the base's. Skipped without a base.
 */
import { gzipSync } from "node:zlib";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import autocannon from "autocannon";
import { chromium } from "playwright-core";
import { DEFAULT_POSTGRES_URL } from "./dataset.mjs";
import { baseTree, startSide } from "./sync-base.mjs";
import { integerSetting } from "./windows.mjs";

const ROOT = resolve(import.meta.dirname, "..");
const TARGETS = { kilobytes: 150, drawMs: 100, api: 0.95 };
const settings = {
  pages: integerSetting("BENCH_CONSOLE_PAGES", 50),
  rounds: integerSetting("BENCH_CONSOLE_ROUNDS", 6),
  seconds: integerSetting("BENCH_CONSOLE_SECONDS", 5),
};
const base = process.argv[2] ?? process.env.BENCH_CONSOLE_BASE;
const log = console.log;
const median = (values) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
const verdict = (met) => (met ? "met" : "MISSED");

function firstPageBytes() {
  const page = readFileSync(join(ROOT, "console", "dist", "index.html"), "utf8");
  const files = [...page.matchAll(/(?:src|href)="\/console\/(assets\/[^"]+\.(?:js|css))"/g)].map((m) => m[1]);
  return files.reduce((sum, file) => sum + gzipSync(readFileSync(join(ROOT, "console", "dist", file)), { level: 9 }).length, 0);
}

/** Per page, ms from its API answer read to the frame after its table is drawn. */
async function drawTimes(side) {
  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", "--disable-gpu"] });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    // Injected through the DevTools protocol, which the page's CSP does not govern.
    await page.addInitScript(() => {
      const text = Response.prototype.text;
      Response.prototype.text = async function () {
        const body = await text.call(this);
        if (this.url.includes("/v1/withdrawals")) window.__answered = performance.now();
        return body;
      };
      window.__draws = [];
      // Drawn: the table's first cell shows another record than before, after an answer came.
      new MutationObserver(() => {
        const first = document.querySelector("tbody td")?.textContent ?? "";
        if (first !== window.__first && window.__answered !== undefined) {
          window.__first = first;
          const answered = window.__answered;
          window.__answered = undefined;
          requestAnimationFrame(() => window.__draws.push(performance.now() - answered));
        }
      }).observe(document, { subtree: true, childList: true, characterData: true });
    });
    await page.goto(`${side.url}/console/`);
    await page.getByLabel("API key").fill(side.key);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("table", { name: /page 1$/ }).waitFor();
    // The first page's own draw is not one of the walk's.
    await page.waitForFunction(() => window.__draws.length >= 1);
    await page.evaluate(() => (window.__draws = []));
    for (let n = 2; n <= settings.pages + 1; n += 1) {
      await page.getByRole("button", { name: "Next" }).click();
      await page.getByRole("table", { name: new RegExp(`page ${n}$`) }).waitFor();
      await page.waitForFunction((count) => window.__draws.length >= count, n - 1);
    }
    return await page.evaluate(() => window.__draws);
  } finally {
    await browser.close();
  }
}

function firstPages(side) {
  return new Promise((done, fail) =>
    autocannon(
      { url: `${side.url}/v1/withdrawals`, connections: 10, duration: settings.seconds, headers: { authorization: `Bearer ${side.key}` } },
      (error, result) => (error ? fail(error) : done(result["2xx"] / settings.seconds)),
    ),
  );
}

const dir = mkdtempSync(join(tmpdir(), "cribline-console-bench-"));
const sides = [];
try {
  const kilobytes = firstPageBytes() / 1024;
  log(
    `console: first page's JavaScript and CSS, gzip: ${kilobytes.toFixed(1)} KB (target < ${TARGETS.kilobytes}): ${verdict(kilobytes < TARGETS.kilobytes)}`,
  );
  const current = await startSide("current", ROOT, "sqlite", DEFAULT_POSTGRES_URL, dir, "read");
  sides.push(current);
  const draws = await drawTimes(current);
  const slowest = Math.max(...draws);
  log(
    `console: ${draws.length} withdrawals pages drawn after their answer: median ${median(draws).toFixed(1)} ms, slowest ${slowest.toFixed(1)} ms (target < ${TARGETS.drawMs}): ${verdict(slowest < TARGETS.drawMs)}`,
  );
  if (base === undefined) log("console: the API with and without the console: skipped (give a base revision)");
  else {
    const tree = baseTree(base, log);
    const before = await startSide("base", tree.dir, "sqlite", DEFAULT_POSTGRES_URL, dir, "read");
    sides.push(before);
    const rates = { current: [], base: [] };
    for (let round = 0; round < settings.rounds; round += 1) {
      const order = round % 2 === 0 ? [current, before] : [before, current];
      for (const side of order) rates[side.name].push(await firstPages(side));
    }
    const sum = (values) => values.reduce((a, b) => a + b, 0);
    const ratio = sum(rates.current) / sum(rates.base);
    log(
      `console: withdrawals first page, this build (console served) over ${tree.commit.slice(0, 12)}: ${ratio.toFixed(3)} (${Math.round(sum(rates.current) / settings.rounds)} against ${Math.round(sum(rates.base) / settings.rounds)} requests/s; target >= ${TARGETS.api}): ${verdict(ratio >= TARGETS.api)}`,
    );
  }
} finally {
  for (const side of sides) await side.stop();
  rmSync(dir, { recursive: true, force: true });
}
