/**
 * The webhooks `cribline serve` sends, run as the real executable against a fresh database per
 * test (README: "Webhooks"): loopback endpoints allowed or refused, and every acknowledged
 * record announced, across a kill between commit and delivery.
 */
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseDatabaseUrl } from "../src/platform/config.js";
import { openStorage } from "../src/storage/database.js";
import { findTenantBySlug } from "../src/tenants/tenant.repository.js";
import { insertEndpoint } from "../src/webhooks/endpoint.repository.js";
import { useCliWorkspace } from "./support/cli.js";
import { createKey, createTenant, expectSuccess, ndjson, SLOW, waitFor, withdrawals } from "./support/cli-steps.js";
import { withdrawal } from "./support/factories.js";
import { Receiver } from "./support/receiver.js";

const workspace = useCliWorkspace();

describe("cribline serve sends webhooks", () => {
  const receiver = new Receiver();
  beforeAll(() => receiver.open());
  afterAll(() => receiver.close());

  /** A tenant with a sync key and an endpoint on the receiver (added in storage: no API yet). */
  async function tenantWithEndpoint(): Promise<{ key: string; secret: string }> {
    await createTenant(workspace(), "acme");
    const key = await createKey(workspace(), "acme", "sync");
    const storage = await openStorage(parseDatabaseUrl(workspace().env.DATABASE_URL!));
    try {
      const tenant = (await findTenantBySlug(storage.db, "acme"))!;
      const endpoint = await insertEndpoint(storage.db, tenant.id, receiver.url, ["withdrawal.created"], Date.now());
      return { key, secret: endpoint.secret };
    } finally {
      await storage.close();
    }
  }

  async function syncOne(base: string, key: string): Promise<string> {
    const record = withdrawal();
    const response = await fetch(`${base}/v1/sync/withdrawals`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({ data: [record] }),
    });
    expect(response.status).toBe(200);
    return record.id as string;
  }

  /** Registers an endpoint on the receiver through the admin API of a running server. */
  async function createEndpoint(base: string, adminKey: string): Promise<string> {
    const response = await fetch(`${base}/v1/webhook-endpoints`, {
      method: "POST",
      headers: { authorization: `Bearer ${adminKey}`, "content-type": "application/json" },
      body: JSON.stringify({ url: receiver.url, events: ["withdrawal.created"] }),
    });
    const body = (await response.json()) as { secret: string };
    expect(response.status, JSON.stringify(body)).toBe(201);
    return body.secret;
  }

  it("delivers a synced record to a loopback endpoint when CRIBLINE_WEBHOOKS_ALLOW_PRIVATE allows it", { timeout: SLOW }, async () => {
    receiver.received.length = 0;
    await createTenant(workspace(), "acme");
    const key = await createKey(workspace(), "acme", "sync,admin");
    const server = await workspace().serve({ CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true" });
    const secret = await createEndpoint(server.url, key);
    const id = await syncOne(server.url, key);
    await waitFor(() => receiver.received.length > 0, 10_000);
    const { headers, body } = receiver.received[0]!;
    const verified = new Webhook(secret).verify(body, headers as Record<string, string>) as { type: string; data: { id: string } };
    expect(verified).toMatchObject({ type: "withdrawal.created", data: { id } });
    expect(await server.stop("SIGTERM")).toEqual({ code: 0, signal: null });
  });

  it(
    "announces every acknowledged record after the process is killed between commit and delivery, with the same webhook-id",
    { timeout: SLOW + 60_000 },
    async () => {
      receiver.received.length = 0;
      await createTenant(workspace(), "acme");
      const key = await createKey(workspace(), "acme", "sync,admin");
      const env = { CRIBLINE_WEBHOOKS_ALLOW_PRIVATE: "true" };
      const first = await workspace().serve(env);
      const secret = await createEndpoint(first.url, key);
      // Until the restart the receiver takes requests and never answers: whatever the first
      // process may have begun sending before it died is not acknowledged.
      receiver.answers = Array.from({ length: 1000 }, () => "hang" as const);
      const records = withdrawals(20);
      const response = await fetch(`${first.url}/v1/sync/withdrawals`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "content-type": "application/json" },
        body: JSON.stringify({ data: records }),
      });
      expect(response.status).toBe(200);
      expect(await first.stop("SIGKILL")).toEqual({ code: null, signal: "SIGKILL" });
      const beforeRestart = receiver.received.map((r) => r.headers["webhook-id"]);

      receiver.answers = [];
      const second = await workspace().serve(env);
      // Usually nothing was sent yet and the restart sends all at once; a delivery the dead
      // process had begun is sent again when its lease (60 s) expires.
      const answered = () => new Map(receiver.received.slice(beforeRestart.length).map((r) => [JSON.parse(r.body).data.id, r]));
      await waitFor(() => answered().size === records.length, SLOW);
      const byRecord = new Map<string, Set<string>>();
      for (const { headers, body } of receiver.received) {
        const verified = new Webhook(secret).verify(body, headers as Record<string, string>) as { data: { id: string } };
        byRecord.set(verified.data.id, (byRecord.get(verified.data.id) ?? new Set()).add(String(headers["webhook-id"])));
      }
      expect([...byRecord.keys()].sort()).toEqual(records.map((r) => r.id as string).sort());
      // Every copy of one record's event, before and after the kill, has one webhook-id.
      for (const ids of byRecord.values()) expect(ids.size).toBe(1);
      expect(await second.stop("SIGTERM")).toEqual({ code: 0, signal: null });
    },
  );

  it("announces what an import stores, like sync, and nothing when the same file is imported again", { timeout: SLOW }, async () => {
    await tenantWithEndpoint();
    const records = withdrawals(30);
    const file = workspace().file("withdrawals.ndjson", ndjson(records));
    const messages = async () => {
      const storage = await openStorage(parseDatabaseUrl(workspace().env.DATABASE_URL!));
      try {
        const rows = await storage.db.selectFrom("webhook_messages").select(["type", "record_id"]).execute();
        return rows.map((row) => `${row.type} ${row.record_id}`).sort();
      } finally {
        await storage.close();
      }
    };
    expectSuccess(await workspace().run(["import", "withdrawals", file, "--tenant", "acme"]));
    const announced = await messages();
    expect(announced).toEqual(records.map((r) => `withdrawal.created ${r.id}`).sort());
    expectSuccess(await workspace().run(["import", "withdrawals", file, "--tenant", "acme"]));
    expect(await messages()).toEqual(announced);
  });

  it("refuses a loopback endpoint by default, and sends it nothing", { timeout: SLOW }, async () => {
    receiver.received.length = 0;
    const { key } = await tenantWithEndpoint();
    const server = await workspace().serve();
    await syncOne(server.url, key);
    const storage = await openStorage(parseDatabaseUrl(workspace().env.DATABASE_URL!));
    try {
      let errors: (string | null)[] = [];
      await waitFor(async () => {
        errors = (await storage.db.selectFrom("webhook_attempts").select("error").execute()).map((a) => a.error);
        return errors.length > 0;
      }, 10_000);
      expect(errors[0]).toMatch(/^refused: 127\.0\.0\.1 is not a public address/);
    } finally {
      await storage.close();
    }
    expect(receiver.received).toHaveLength(0);
  });
});
