#!/usr/bin/env node
/**
 * Makes the README's pictures of the console, docs/console/*.png, from a real server:
 *
 *   npm run build && node scripts/console-screenshots.mjs
 *
 * It starts cribline on a new SQLite database in a temporary directory (the demo tenant and its
 * key, printed at the first start), adds a webhook endpoint with a failed attempt and a key
 * made for an integration, then signs in to /console in Debian's `chromium` (playwright-core)
 * and takes each main page at 1280x800, and the withdrawals at a phone's width.
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";

const ROOT = new URL("..", import.meta.url).pathname;
const OUT = join(ROOT, "docs", "console");
const dir = mkdtempSync(join(tmpdir(), "cribline-console-"));
const freePort = () =>
  new Promise((resolve) => {
    const probe = createServer().listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });

const port = await freePort();
const server = spawn(process.execPath, [join(ROOT, "bin", "cribline"), "serve"], {
  cwd: dir,
  env: { ...process.env, DATABASE_URL: `sqlite:${join(dir, "cribline.db")}`, PORT: String(port), CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true" },
  stdio: ["ignore", "pipe", "pipe"],
});
let output = "";
server.stdout.on("data", (d) => (output += d));
server.stderr.on("data", (d) => (output += d));
const base = `http://127.0.0.1:${port}`;
try {
  for (let waited = 0; !/listening on/.test(output); waited += 200) {
    if (waited > 120_000) throw new Error(`cribline did not start:\n${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const key = /crib_[0-9A-Za-z]{38}/.exec(output)?.[0];
  if (key === undefined) throw new Error("no demo key printed");
  const call = async (method, path, body) => {
    const reply = await fetch(base + path, {
      method,
      headers: { authorization: `Bearer ${key}`, ...(body ? { "content-type": "application/json" } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    if (!reply.ok) throw new Error(`${method} ${path}: ${reply.status} ${await reply.text()}`);
    return reply.json();
  };
  // An endpoint whose receiver is not there: its test event fails, as a real outage would.
  await call("POST", "/v1/webhook-endpoints", {
    url: `http://127.0.0.1:${await freePort()}/erp`,
    events: ["withdrawal.created", "employee.updated"],
    description: "ERP bridge",
  });
  await call("POST", "/v1/api-keys", { name: "BI connector", scopes: ["read"] });

  const browser = await chromium.launch({ executablePath: "/usr/bin/chromium", args: ["--no-sandbox", "--disable-gpu"] });
  const shoot = async (name, width, height, visit) => {
    const page = await browser.newPage({ viewport: { width, height } });
    await page.goto(`${base}/console/`);
    await page.getByLabel("API key").fill(key);
    if (name === "sign-in") {
      await page.screenshot({ path: join(OUT, `${name}.png`) });
      return page.close();
    }
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("button", { name: "Sign out" }).waitFor();
    await visit(page);
    await page.waitForLoadState("networkidle");
    await page.screenshot({ path: join(OUT, `${name}.png`) });
    await page.close();
  };
  const year = new Date().getUTCFullYear();
  await shoot("sign-in", 1280, 800, async () => undefined);
  await shoot("withdrawals", 1280, 800, (page) => page.getByRole("table").waitFor());
  await shoot("withdrawals-phone", 390, 844, (page) => page.getByRole("table").waitFor());
  await shoot("usage", 1280, 800, async (page) => {
    await page.getByRole("link", { name: "Usage" }).click();
    await page.getByLabel("From (first day)").fill(`${year}-01-01`);
    await page.getByLabel("Until (last day)").fill(`${year}-12-31`);
    await page.getByRole("button", { name: "Show" }).click();
    await page
      .getByRole("img", { name: /withdrawn$/ })
      .first()
      .waitFor();
  });
  await shoot("events", 1280, 800, (page) => page.getByRole("link", { name: "Events" }).click());
  await shoot("webhooks", 1280, 800, async (page) => {
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.getByRole("button", { name: "Details" }).first().click();
    await page.getByRole("button", { name: "Send test event" }).click();
    await page.getByRole("status").filter({ hasText: "Test event" }).waitFor();
  });
  await shoot("keys", 1280, 800, (page) => page.getByRole("link", { name: "API keys" }).click());
  await browser.close();
  console.log(`pictures of the console in ${OUT}`);
} finally {
  server.kill("SIGTERM");
  await new Promise((r) => server.once("exit", r));
  rmSync(dir, { recursive: true, force: true });
}
