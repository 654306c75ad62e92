#!/usr/bin/env node
/**
 * Makes docs/grafana/cribline.png: a picture of the dashboard in docs/grafana/cribline.json
 * over a real run. Grafana is not packaged by Debian or npm, so the panels are drawn here, from
 * the dashboard's own PromQL queries, answered by a real Prometheus (Debian's `prometheus`)
 * that scraped a real cribline under load; the picture is taken by Debian's `chromium`.
 *
 *   npm run build && node scripts/dashboard-picture.mjs [minutes of load, default 6]
 *
 * It starts, in a temporary directory: cribline on a new SQLite database (the demo tenant),
 * with its metrics listener; a webhook receiver that fails one request in five; Prometheus
 * scraping cribline every 5 s; then a load of list pages (some with a window or a name, some
 * malformed), sync batches, and single-record syncs that queue webhooks.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";

const ROOT = new URL("..", import.meta.url).pathname;
const minutes = Number(process.argv[2] ?? 6);
const dir = mkdtempSync(join(tmpdir(), "cribline-dashboard-"));
const API = 3700;
const METRICS = 3701;
const PROMETHEUS = 3702;
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const children = [];
const start = (command, args, env = {}) => {
  const child = spawn(command, args, { cwd: dir, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (d) => (output += d));
  child.stderr.on("data", (d) => (output += d));
  children.push(child);
  return { child, output: () => output };
};

async function main() {
  const cribline = start(process.execPath, [join(ROOT, "bin/cribline"), "serve"], {
    DATABASE_URL: `sqlite:${join(dir, "cribline.db")}`,
    PORT: String(API),
    CRIBLINE_METRICS_PORT: String(METRICS),
    CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true",
    LOG_LEVEL: "warn",
  });
  while (!/listening on/.test(cribline.output())) await sleep(200);
  const key = /Demo API key[^:]*: (crib_\w+)/.exec(cribline.output())[1];
  let received = 0;
  const receiver = createServer((req, res) => {
    req.resume();
    req.on("end", () => {
      received += 1;
      res.writeHead(received % 5 === 0 ? 503 : 200).end();
    });
  }).listen(3703, "127.0.0.1");
  writeFileSync(
    join(dir, "prometheus.yml"),
    `global: { scrape_interval: 5s }\nscrape_configs:\n  - job_name: cribline\n    static_configs: [{ targets: ["127.0.0.1:${METRICS}"] }]\n`,
  );
  start("prometheus", [
    `--config.file=${join(dir, "prometheus.yml")}`,
    `--storage.tsdb.path=${join(dir, "tsdb")}`,
    `--web.listen-address=127.0.0.1:${PROMETHEUS}`,
  ]);
  const call = (method, path, body) =>
    fetch(`http://127.0.0.1:${API}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    }).then((r) => r.text());
  await call("POST", "/v1/webhook-endpoints", { url: "http://127.0.0.1:3703/hooks", events: ["withdrawal.created"] });
  const began = Date.now();
  const until = began + minutes * 60_000;
  let n = 0;
  const record = () => ({
    id: `pic-${Date.now()}-${(n += 1)}`,
    deviceId: "dev-01",
    employeeId: "emp-0001",
    employeeName: "Ana Souza",
    productId: "prd-001",
    productName: "Luva nitrílica",
    quantity: 1,
    costCenterId: "cc-01",
    sectorId: "sec-01",
    deliveredAt: new Date().toISOString(),
  });
  const readers = Array.from({ length: 3 }, async (_, reader) => {
    const queries = [
      "",
      "?limit=100",
      "?name=ma",
      "?createdSince=2026-11-01T00:00:00Z&createdUntil=2026-11-02T00:00:00Z",
      "?employeeId=emp-0007",
      "?limit=0",
    ];
    for (let i = 0; Date.now() < until; i += 1) {
      // Traffic that rises and falls over the run.
      const phase = Math.sin(((Date.now() - began) / 60_000) * Math.PI);
      await call("GET", `/v1/withdrawals${queries[(i + reader) % queries.length]}`);
      await sleep(phase > 0 ? 5 : 25);
    }
  });
  const writer = (async () => {
    while (Date.now() < until) {
      await call("POST", "/v1/sync/withdrawals", { data: Array.from({ length: 200 }, record) });
      for (let i = 0; i < 10; i += 1) await call("POST", "/v1/sync/withdrawals", { data: [record()] });
      await sleep(500);
    }
  })();
  await Promise.all([...readers, writer]);
  await sleep(10_000);
  const html = await render(began, Date.now());
  writeFileSync(join(dir, "dashboard.html"), html);
  const out = join(ROOT, "docs/grafana/cribline.png");
  const shot = start("chromium", [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    `--user-data-dir=${join(dir, "chromium")}`,
    "--hide-scrollbars",
    "--window-size=1600,1790",
    `--screenshot=${out}`,
    `file://${join(dir, "dashboard.html")}`,
  ]);
  await new Promise((resolve) => shot.child.once("exit", resolve));
  receiver.close();
  console.log(`wrote ${out} (${minutes} min of load; the page is ${join(dir, "dashboard.html")})`);
}

/** The dashboard's panels, drawn as SVG from Prometheus's answers to their queries. */
async function render(from, to) {
  const dashboard = JSON.parse(readFileSync(join(ROOT, "docs/grafana/cribline.json"), "utf8"));
  const COLORS = ["#73bf69", "#f2cc0c", "#5794f2", "#ff780a", "#b877d9", "#f2495c", "#8ab8ff", "#fade2a"];
  const query = async (expr) => {
    const q = expr.replaceAll("$job", "cribline").replaceAll("$__rate_interval", "30s");
    const url = `http://127.0.0.1:${PROMETHEUS}/api/v1/query_range?query=${encodeURIComponent(q)}&start=${from / 1000}&end=${to / 1000}&step=5`;
    return (await (await fetch(url)).json()).data?.result ?? [];
  };
  const label = (format, metric) => format.replace(/\{\{(\w+)\}\}/g, (_, name) => metric[name] ?? "");
  const unitText = (unit, v) =>
    unit === "bytes"
      ? `${(v / 2 ** 20).toFixed(0)} MiB`
      : unit === "s"
        ? v < 1
          ? `${(v * 1000).toFixed(1)} ms`
          : `${v.toFixed(1)} s`
        : unit === "reqps"
          ? `${v.toFixed(1)}/s`
          : v.toFixed(v < 10 ? 2 : 0);
  let cells = "";
  for (const panel of dashboard.panels) {
    const series = [];
    for (const target of panel.targets)
      for (const s of await query(target.expr))
        series.push({ name: label(target.legendFormat ?? "", s.metric), points: s.values.map(([t, v]) => [t * 1000, Number(v)]) });
    const { x, y, w, h } = panel.gridPos;
    const style = `grid-column:${x + 1}/span ${w};grid-row:${y + 1}/span ${h}`;
    const unit = panel.fieldConfig.defaults.unit;
    if (panel.type === "stat") {
      const last = series[0]?.points.at(-1)?.[1] ?? 0;
      cells += `<div class="panel" style="${style}"><div class="title">${panel.title}</div><div class="stat">${unitText(unit, last)}</div></div>`;
      continue;
    }
    const width = 760 * (w / 12);
    const height = h * 30 - 60;
    const max = Math.max(1e-9, ...series.flatMap((s) => s.points.map((p) => p[1]).filter(Number.isFinite)));
    const px = (t) => ((t - from) / (to - from)) * (width - 60) + 50;
    const py = (v) => height - 10 - (v / max) * (height - 20);
    const lines = series
      .map(
        (s, i) =>
          `<polyline fill="none" stroke="${COLORS[i % COLORS.length]}" stroke-width="1.5" points="${s.points
            .filter((p) => Number.isFinite(p[1]))
            .map((p) => `${px(p[0]).toFixed(1)},${py(p[1]).toFixed(1)}`)
            .join(" ")}"/>`,
      )
      .join("");
    const axis = [0, 0.5, 1]
      .map(
        (f) =>
          `<text x="4" y="${py(max * f) + 4}" class="axis">${unitText(unit, max * f)}</text><line x1="50" x2="${width - 10}" y1="${py(max * f)}" y2="${py(max * f)}" class="grid"/>`,
      )
      .join("");
    const legend = series
      .slice(0, 8)
      .map((s, i) => `<span><i style="background:${COLORS[i % COLORS.length]}"></i>${s.name || panel.title}</span>`)
      .join("");
    cells += `<div class="panel" style="${style}"><div class="title">${panel.title}</div><svg width="${width}" height="${height}">${axis}${lines}</svg><div class="legend">${legend}</div></div>`;
  }
  const span = `${new Date(from).toISOString().slice(11, 16)}–${new Date(to).toISOString().slice(11, 16)} UTC`;
  return `<!doctype html><meta charset="utf-8"><style>
body{margin:0;background:#111217;color:#ccccdc;font:12px Inter,Helvetica,Arial,sans-serif}
header{padding:10px 16px;font-size:16px;color:#fff}header small{color:#8e8e9e;margin-left:12px;font-size:12px}
main{display:grid;grid-template-columns:repeat(24,1fr);grid-auto-rows:30px;gap:6px;padding:0 10px}
.panel{background:#181b1f;border:1px solid #2a2d33;border-radius:3px;padding:6px;overflow:hidden}
.title{font-weight:600;color:#d8d9da;margin-bottom:4px}.stat{font-size:40px;color:#73bf69;text-align:center;margin-top:10px}
.axis{fill:#8e8e9e;font-size:10px}.grid{stroke:#2a2d33}.legend span{margin-right:12px;white-space:nowrap}.legend i{display:inline-block;width:10px;height:3px;margin-right:4px;vertical-align:middle}
</style><header>cribline<small>docs/grafana/cribline.json · Prometheus · ${span} · job=cribline</small></header><main>${cells}</main>`;
}

main()
  .catch((error) => {
    console.error(error);
    process.exitCode = 1;
  })
  .finally(() => {
    for (const child of children) child.kill("SIGTERM");
  });
