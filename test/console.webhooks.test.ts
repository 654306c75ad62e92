/**
 * The console's webhooks page in headless Chromium against a real server: an endpoint made to
 * a receiver the test runs gets the test event the page sends; a failed attempt is replayed
 * from the page and arrives.
 */
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DeliveryLoop } from "../src/webhooks/delivery/delivery.loop.js";
import { launchChromium, seriousViolations } from "./support/browser.js";
import { withdrawal } from "./support/factories.js";
import { get, newTenant, request, sync, useServer } from "./support/harness.js";
import { Receiver } from "./support/receiver.js";

const server = useServer({ CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true" });
const receiver = new Receiver();
let browser: Browser;
beforeAll(async () => {
  browser = await launchChromium();
  await receiver.open();
});
afterAll(async () => {
  await browser?.close();
  await receiver.close();
});

/** Sends what is due now, as any serving process does. */
const deliver = () =>
  new DeliveryLoop(server().storage.db, { clock: Date.now, allowPrivate: true, timeoutMs: 2000 }, (error) => {
    throw error;
  }).runOnce();

describe("the console's webhooks", () => {
  it("makes an endpoint that receives its test event, and replays a failed attempt", async () => {
    const tenant = await newTenant(server());
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${server().url}/console/`);
    await page.getByLabel("API key").fill(tenant.keys.all);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("link", { name: "Webhooks" }).click();

    const create = page.getByRole("form", { name: "Create endpoint" });
    await create.getByLabel("URL").fill(receiver.url);
    await create.getByRole("button", { name: "Create endpoint" }).click();
    await expect.poll(() => page.getByLabel("Signing secret").textContent()).toMatch(/^whsec_/);
    await page.getByRole("button", { name: "Send test event" }).click();
    await expect.poll(() => page.getByRole("status").filter({ hasText: "Test event" }).textContent()).toContain("succeeded");
    expect(receiver.received.map((r) => JSON.parse(r.body).type)).toEqual(["ping"]);
    expect(await seriousViolations(page)).toEqual([]);

    // A withdrawal whose delivery fails, then a replay from the page.
    receiver.answers = [500];
    await sync(server(), tenant, "withdrawals", [withdrawal()]);
    await deliver();
    await page.getByRole("button", { name: "Send test event" }).click();
    const replay = page.getByRole("button", { name: /^Replay msg_/ }).first();
    await replay.waitFor();
    expect(await page.locator("tbody").last().textContent()).toContain("500");
    // Only the failed attempts, and one of them whole: what was sent, what came back.
    await page.getByLabel("Outcome").selectOption("failed");
    await expect.poll(() => page.locator("tbody").last().locator("tr").count()).toBe(1);
    await page.locator("tbody").last().getByRole("button", { name: "Details" }).click();
    await expect.poll(() => page.getByRole("region", { name: /^Attempt att_/ }).textContent()).toContain("HTTP 500");
    await expect.poll(() => page.getByRole("region", { name: "The event sent" }).textContent()).toContain("withdrawal.created");
    await replay.click();
    await expect.poll(() => page.getByRole("status").filter({ hasText: "Replaying" }).count()).toBe(1);
    await deliver();
    await expect.poll(() => receiver.received.filter((r) => JSON.parse(r.body).type === "withdrawal.created").length).toBe(2);
    await page.close();
  });

  it("changes an endpoint, disables and enables it, rotates its secret and replays a period", async () => {
    const tenant = await newTenant(server());
    const made = await request(server(), "POST", "/v1/webhook-endpoints", {
      key: tenant.keys.admin,
      body: { url: receiver.url, events: ["withdrawal.created"] },
    });
    const endpoint = `/v1/webhook-endpoints/${made.body.id}`;
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${server().url}/console/`);
    await page.getByLabel("API key").fill(tenant.keys.admin);
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("link", { name: "Webhooks" }).click();
    await page.getByRole("button", { name: "Details" }).click();
    const view = page.getByRole("region", { name: `Endpoint ${receiver.url}` });
    const status = (text: string) => expect.poll(() => view.getByRole("status").textContent()).toContain(text);

    const save = view.getByRole("form", { name: "Save changes" });
    await save.getByLabel("Description").fill("ERP bridge");
    await save.getByRole("checkbox", { name: "return.created" }).check();
    await save.getByRole("button", { name: "Save changes" }).click();
    await status("Saved");
    expect((await get(server(), endpoint, tenant.keys.admin)).body).toMatchObject({
      description: "ERP bridge",
      events: ["withdrawal.created", "return.created"],
    });

    await view.getByRole("button", { name: "Disable" }).click();
    await status("Disabled");
    expect((await get(server(), endpoint, tenant.keys.admin)).body.enabled).toBe(false);
    await view.getByRole("button", { name: "Enable" }).click();
    await status("Enabled");
    expect((await get(server(), endpoint, tenant.keys.admin)).body.enabled).toBe(true);

    await view.getByRole("button", { name: "Rotate secret" }).click();
    await status("New secret, shown only now: whsec_");

    const replay = view.getByRole("form", { name: "Replay a period" });
    await replay.getByLabel(/^Replay from/).fill("2026-01-01T00:00");
    await replay.getByLabel(/^Replay until/).fill("2026-12-31T00:00");
    await replay.getByRole("button", { name: "Replay period" }).click();
    await status("Replayed 0 deliveries");
    await page.close();
  });
});
