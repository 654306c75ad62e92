/**
 * The console at /console (README, "Console") in headless Chromium against a real server: sign
 * in with a key and see only what its scopes allow; walk a list through three pages and back;
 * a window in the tenant's zone; usage figures as the API gives them; a key made, used and
 * revoked; no inline script runs; no serious accessibility violation on any page.
 */
import { readFileSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { setTenantZone } from "../src/usage/usage.repository.js";
import { launchChromium, seriousViolations } from "./support/browser.js";
import { withdrawal } from "./support/factories.js";
import { get, newTenant, readAll, sync, useServer, type TestTenant } from "./support/harness.js";

const server = useServer({ CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true" });
let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
});
afterAll(async () => browser?.close());

async function signedIn(key: string, width = 1280, height = 800): Promise<Page> {
  const page = await browser.newPage({ viewport: { width, height } });
  page.on("pageerror", (error) => {
    throw error;
  });
  await page.goto(`${server().url}/console/`);
  await page.getByLabel("API key").fill(key);
  await page.getByRole("button", { name: "Sign in" }).click();
  await page.getByRole("button", { name: "Sign out" }).waitFor();
  return page;
}

/** The table of page `number` once its rows have come (it is busy while they are on their way). */
const loaded = (page: Page, number: number) =>
  page.locator("table[aria-busy='false']", { has: page.locator("caption", { hasText: new RegExp(`page ${number}$`) }) }).waitFor();

/** The ids in the records table, once the page named `number` is shown. */
async function shownIds(page: Page, number: number): Promise<string[]> {
  await loaded(page, number);
  return page.locator("tbody tr td:first-child").allTextContents();
}

async function tenantWithRecords(count: number): Promise<TestTenant> {
  const tenant = await newTenant(server());
  const day = Date.UTC(2026, 10, 1);
  const records = Array.from({ length: count }, (_, i) =>
    withdrawal({
      id: `c-${String(i).padStart(3, "0")}`,
      costCenterId: `cc-${i % 3}`,
      employeeId: `e-${i % 7}`,
      quantity: 1 + (i % 4),
      deliveredAt: new Date(day + i * 3_600_000).toISOString(),
    }),
  );
  await sync(server(), tenant, "withdrawals", records);
  return tenant;
}

describe("the console", () => {
  it("is served with a CSP that lets no inline script run, nor any frame", async () => {
    const reply = await fetch(`${server().url}/console/`);
    expect(reply.status).toBe(200);
    const policy = reply.headers.get("content-security-policy") ?? "";
    expect(policy).toContain("script-src 'self'");
    expect(policy).toContain("frame-ancestors 'none'");
    expect(policy).not.toContain("unsafe-inline");
    expect((await fetch(`${server().url}/console`, { redirect: "manual" })).headers.get("location")).toBe("/console/");
    const page = await browser.newPage();
    await page.goto(`${server().url}/console/`);
    await page.addScriptTag({ content: "window.inlineRan = true" }).catch(() => undefined);
    expect(await page.evaluate(() => (globalThis as unknown as { inlineRan?: boolean }).inlineRan)).toBeUndefined();
    await page.close();
  });

  it("signs in with a key, offers only what its scopes allow, and shows a refusal's detail", async () => {
    const tenant = await newTenant(server());
    const page = await browser.newPage();
    await page.goto(`${server().url}/console/`);
    await page.getByLabel("API key").fill("crib_notakey");
    await page.getByRole("button", { name: "Sign in" }).click();
    await expect.poll(() => page.getByRole("alert").textContent()).toContain("the API key is malformed");
    await page.close();
    const reader = await signedIn(tenant.keys.read);
    const links = await reader.getByRole("navigation", { name: "Pages" }).getByRole("link").allTextContents();
    expect(links).toContain("Withdrawals");
    expect(links).toContain("Usage");
    expect(links).not.toContain("API keys");
    expect(links).not.toContain("Webhooks");
    await reader.close();
    const admin = await signedIn(tenant.keys.admin);
    expect(await admin.getByRole("navigation", { name: "Pages" }).getByRole("link").allTextContents()).toEqual(["Webhooks", "API keys"]);
    await admin.close();
  });

  it("walks a list through three pages and back, as the API pages it, and applies a window in the tenant's zone", async () => {
    const tenant = await tenantWithRecords(45);
    await setTenantZone(server().storage.db, tenant.id, "America/Sao_Paulo");
    const api = (await readAll(server(), tenant.keys.read, "/v1/withdrawals", [20])).items.map((r: any) => r.id);
    const page = await signedIn(tenant.keys.read);
    expect(await shownIds(page, 1)).toEqual(api.slice(0, 20));
    await page.getByRole("button", { name: "Next" }).click();
    expect(await shownIds(page, 2)).toEqual(api.slice(20, 40));
    await page.getByRole("button", { name: "Next" }).click();
    expect(await shownIds(page, 3)).toEqual(api.slice(40));
    expect(await page.getByRole("button", { name: "Next" }).isDisabled()).toBe(true);
    await page.getByRole("button", { name: "Previous" }).click();
    expect(await shownIds(page, 2)).toEqual(api.slice(20, 40));

    // 2026-11-01 05:00 to 08:00 in Sao Paulo (UTC-3) is 08:00 to 11:00 UTC: records 8 to 11.
    await page.getByLabel("Event from (America/Sao_Paulo)").fill("2026-11-01T05:00:00");
    await page.getByLabel("Event until (America/Sao_Paulo)").fill("2026-11-01T08:00:00");
    await page.getByRole("button", { name: "Apply" }).click();
    await expect.poll(() => page.locator("tbody tr td:first-child").allTextContents()).toEqual(["c-011", "c-010", "c-009", "c-008"]);
    await page.locator("tbody tr").first().getByRole("button", { name: "Details" }).click();
    await expect.poll(() => page.getByRole("region", { name: "Withdrawals: c-011" }).textContent()).toContain("deliveredAt");
    expect(await seriousViolations(page)).toEqual([]);
    await page.close();
  });

  it("draws a usage report whose figures are the API's, on a desktop and a phone", async () => {
    const tenant = await tenantWithRecords(30);
    const report = await get(
      server(),
      "/v1/usage?groupBy=costCenterId&interval=month&createdSince=2026-11-01T00:00:00Z&createdUntil=2026-11-30T23:59:59.999Z",
      tenant.keys.read,
    );
    for (const [width, height] of [
      [1280, 800],
      [390, 844],
    ] as const) {
      const page = await signedIn(tenant.keys.read, width, height);
      await page.getByRole("link", { name: "Usage" }).click();
      await page.getByLabel("From (first day)").fill("2026-11-01");
      await page.getByLabel("Until (last day)").fill("2026-11-30");
      await page.getByRole("button", { name: "Show" }).click();
      const bars = page.getByRole("img", { name: /withdrawn$/ });
      await expect.poll(() => bars.count()).toBe(report.body.data.length);
      const labels = await bars.evaluateAll((nodes) => nodes.map((n) => n.getAttribute("aria-label")));
      expect(labels).toEqual(report.body.data.map((r: any) => `2026-11-01 ${r.costCenterId}: ${r.withdrawals.quantity} withdrawn`));
      // The CSV download: every row, the export's columns.
      const [download] = await Promise.all([page.waitForEvent("download"), page.getByRole("button", { name: "Download CSV" }).click()]);
      const csv = readFileSync((await download.path())!, "utf8")
        .trimEnd()
        .split("\r\n");
      expect(csv[0]).toBe(
        "period,costCenterId,costCenterName,withdrawals.count,withdrawals.quantity,returns.count,returns.quantity,exchanges.count,exchanges.quantity,netQuantity",
      );
      expect(csv.slice(1)).toEqual(
        report.body.data.map((r: any) =>
          [r.period, r.costCenterId, "", r.withdrawals.count, r.withdrawals.quantity, 0, 0, 0, 0, r.netQuantity].join(","),
        ),
      );
      expect(await seriousViolations(page)).toEqual([]);
      await page.close();
    }
  });

  it("ranks the top employees of a period by units withdrawn, over every page of the report", async () => {
    const tenant = await tenantWithRecords(30);
    const page = await signedIn(tenant.keys.read);
    await page.getByRole("link", { name: "Usage" }).click();
    await page.getByLabel("Group by").selectOption("employeeId");
    await page.getByLabel("Per").selectOption("total");
    await page.getByLabel("From (first day)").fill("2026-11-01");
    await page.getByLabel("Until (last day)").fill("2026-11-30");
    await page.getByRole("button", { name: "Show" }).click();
    await page.getByRole("button", { name: /^Top 20/ }).click();
    const ranked = page.getByRole("figure", { name: /^Top 20/ }).locator("li");
    await expect.poll(() => ranked.count()).toBeGreaterThan(0);
    const shown = await ranked.evaluateAll((items) => items.map((li) => Number(li.getAttribute("data-quantity"))));
    const report = await readAll(
      server(),
      tenant.keys.read,
      "/v1/usage?groupBy=employeeId&interval=total&createdSince=2026-11-01T00:00:00Z&createdUntil=2026-11-30T23:59:59.999Z",
    );
    const expected = report.items
      .map((r: any) => r.withdrawals.quantity)
      .sort((a: number, b: number) => b - a)
      .slice(0, 20);
    expect(shown).toEqual(expected);
    await page.close();
  });

  it("works by keyboard: sign-in, the pages' links, a list's pages; sign-in and events pass axe", async () => {
    const tenant = await tenantWithRecords(25);
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${server().url}/console/`);
    expect(await seriousViolations(page)).toEqual([]);
    await page.keyboard.press("Tab");
    await page.keyboard.type(tenant.keys.read);
    await page.keyboard.press("Enter");
    await page.getByRole("button", { name: "Sign out" }).waitFor();
    const events = page.getByRole("link", { name: "Events" });
    await events.focus();
    await page.keyboard.press("Enter");
    await page.getByRole("heading", { name: "Events" }).waitFor();
    expect(await seriousViolations(page)).toEqual([]);
    // The type filter: the sync's 25 withdrawals are the only events.
    await expect.poll(() => page.locator("tbody tr").count()).toBe(20);
    await page.getByLabel("Type").selectOption("employee.created");
    await expect.poll(() => page.locator("tbody").textContent()).toBe("Nothing here.");
    await page.getByLabel("Type").selectOption("withdrawal.created");
    await expect.poll(() => page.locator("tbody tr td:nth-child(2)").allTextContents()).toEqual(Array(20).fill("withdrawal.created"));
    await page.getByRole("link", { name: "Withdrawals" }).focus();
    await page.keyboard.press("Enter");
    await loaded(page, 1);
    await page.getByRole("button", { name: "Next" }).focus();
    await page.keyboard.press("Enter");
    await loaded(page, 2);
    await page.close();
  });

  it("makes a key, shows it once, and revokes it after a confirmation: the next request with it is refused", async () => {
    const tenant = await newTenant(server());
    const page = await signedIn(tenant.keys.admin);
    await page.getByRole("link", { name: "API keys" }).click();
    await page.getByLabel("Name").fill("console test");
    await page.getByRole("checkbox", { name: "read" }).check();
    await page.getByRole("button", { name: "Create key" }).click();
    const made = (await page.getByRole("status").locator("output").textContent()) ?? "";
    expect(made).toMatch(/^crib_/);
    expect((await get(server(), "/v1/withdrawals", made)).status).toBe(200);
    expect(await seriousViolations(page)).toEqual([]);
    page.once("dialog", (dialog) => void dialog.accept());
    await page.getByRole("button", { name: "Revoke console test" }).click();
    await expect.poll(async () => (await get(server(), "/v1/withdrawals", made)).status).toBe(401);
    await page.close();
  });
});
