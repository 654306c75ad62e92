/**
 * The webhook outbox (docs/webhooks.md, docs/architecture.md): a sync writes one message (an
 * event) per record change, in the same transaction, with `data` exactly as the list returns
 * the record, and one fan-out per enabled endpoint of the tenant naming the messages it takes
 * (the delivery loop makes them deliveries, see webhooks.delivery.test.ts); nothing for an
 * unchanged re-send or a refused batch, no fan-out to another tenant's endpoint or a disabled one. Messages are signed
 * as Standard Webhooks specifies (checked with its reference library).
 */
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { insertEndpoint, setEndpointDisabled } from "../src/webhooks/endpoint.repository.js";
import { EVENT_TYPES } from "../src/webhooks/events.js";
import { withPayloads } from "../src/webhooks/delivery/payload.repository.js";
import { idTime, newId } from "../src/webhooks/ids.js";
import { newSecret, webhookHeaders } from "../src/webhooks/signature.js";
import { employee, withdrawal } from "./support/factories.js";
import { get, newTenant, request, sync, useServer, type TestServer, type TestTenant } from "./support/harness.js";

const server = useServer();

/** The tenant's messages as stored, and `body`: the payload as sent (built from the record for a transaction). */
async function messagesOf(srv: TestServer, tenant: TestTenant) {
  const stored = await srv.storage.db
    .selectFrom("webhook_messages")
    .select(["tenant_id", "id", "type", "created_at", "record_id", "payload"])
    .where("tenant_id", "=", tenant.id)
    .orderBy("created_at")
    .orderBy("id")
    .execute();
  const sent = stored.map((row) => ({ ...row }));
  await withPayloads(srv.storage.db, sent);
  return stored.map((row, i) => ({ ...row, body: sent[i]!.payload! }));
}

async function fanoutsOf(srv: TestServer, tenant: TestTenant) {
  const rows = await srv.storage.db
    .selectFrom("webhook_fanouts")
    .select(["endpoint_id", "created_at", "message_ids"])
    .where("tenant_id", "=", tenant.id)
    .execute();
  return rows.map((row) => ({ endpointId: row.endpoint_id, createdAt: row.created_at, messageIds: row.message_ids.split(" ") }));
}

async function endpoint(srv: TestServer, tenant: TestTenant, events: string[]) {
  return insertEndpoint(srv.storage.db, tenant.id, "https://example.com/hooks", events, Date.now());
}

describe("the webhook outbox", () => {
  it("lists every event type: created for every collection, updated for master data", () => {
    expect(EVENT_TYPES).toEqual([
      "withdrawal.created",
      "return.created",
      "exchange.created",
      "training-record.created",
      "employee.created",
      "employee.updated",
      "cost-center.created",
      "cost-center.updated",
      "sector.created",
      "sector.updated",
      "product.created",
      "product.updated",
      "device.created",
      "device.updated",
    ]);
  });

  it("writes a message per created record with data exactly as the list returns it, and a fan-out per endpoint", async () => {
    const srv = server();
    const tenant = await newTenant(srv);
    const [a, b] = [
      await endpoint(srv, tenant, ["withdrawal.created"]),
      await endpoint(srv, tenant, ["withdrawal.created", "return.created"]),
    ];
    const records = [withdrawal({ employeeName: "Zoë Ærø" }), withdrawal()];
    srv.clock.now = Date.UTC(2026, 10, 22, 9, 30, 0, 123);
    try {
      await sync(srv, tenant, "withdrawals", records);
    } finally {
      srv.clock.now = undefined;
    }

    const listed = (await get(srv, "/v1/withdrawals", tenant.keys.read)).body.data as { id: string }[];
    const messages = await messagesOf(srv, tenant);
    expect(messages).toHaveLength(2);
    for (const message of messages) {
      // A transaction never changes: its message names it, and the payload is built when sent.
      expect(message.payload).toBeNull();
      const payload = JSON.parse(message.body);
      expect(Object.keys(payload)).toEqual(["type", "timestamp", "data"]);
      expect(payload.type).toBe("withdrawal.created");
      expect(payload.timestamp).toBe("2026-11-22T09:30:00.123Z");
      expect(payload.data.id).toBe(message.record_id);
      expect(payload.data).toEqual(listed.find((item) => item.id === payload.data.id));
      expect(message.body).toContain(JSON.stringify(payload.data));
    }
    expect(messages.map((m) => m.record_id).sort()).toEqual(records.map((r) => r.id).sort());
    const fanouts = await fanoutsOf(srv, tenant);
    expect(fanouts.map((f) => f.endpointId).sort()).toEqual([a.id, b.id].sort());
    for (const fanout of fanouts) {
      expect(fanout.messageIds, "every message, in the order written").toEqual(messages.map((m) => m.id));
      expect(fanout.createdAt).toBe(Date.UTC(2026, 10, 22, 9, 30, 0, 123));
    }
  });

  it("announces a master record's update with its original createdAt, and nothing for an unchanged re-send", async () => {
    const srv = server();
    const tenant = await newTenant(srv);
    await endpoint(srv, tenant, ["employee.created", "employee.updated"]);
    const person = employee({ name: "Ana" });
    await sync(srv, tenant, "employees", [person]);
    await sync(srv, tenant, "employees", [person]);
    expect(await messagesOf(srv, tenant)).toHaveLength(1);

    await sync(srv, tenant, "employees", [{ ...person, name: "Ana Maria" }]);
    const messages = await messagesOf(srv, tenant);
    expect(messages.map((m) => m.type)).toEqual(["employee.created", "employee.updated"]);
    const listed = (await get(srv, "/v1/employees", tenant.keys.read)).body.data[0];
    // Master data may change again before a message goes: its payload is kept as of the change.
    expect(messages.map((m) => m.body)).toEqual(messages.map((m) => m.payload));
    const updated = JSON.parse(messages[1]!.body).data;
    expect(updated).toEqual(listed);
    expect(updated.createdAt).toBe(JSON.parse(messages[0]!.body).data.createdAt);
    expect(updated.updatedAt > updated.createdAt).toBe(true);
  });

  it("writes an event for every change and a fan-out only to the enabled endpoints of the tenant that take it; nothing for a refused batch", async () => {
    const srv = server();
    const [tenant, other] = [await newTenant(srv), await newTenant(srv)];
    await endpoint(srv, other, ["withdrawal.created"]);
    const returnsOnly = await endpoint(srv, tenant, ["return.created"]);
    await sync(srv, tenant, "withdrawals", [withdrawal()]);
    expect(await messagesOf(srv, tenant)).toHaveLength(1);
    expect(await fanoutsOf(srv, tenant)).toEqual([]);

    const taker = await endpoint(srv, tenant, ["withdrawal.created"]);
    const stored = withdrawal();
    await sync(srv, tenant, "withdrawals", [stored]);
    expect(await messagesOf(srv, tenant)).toHaveLength(2);
    // A 409 applies nothing of its batch, the events included.
    const refused = await request(srv, "POST", "/v1/sync/withdrawals", {
      key: tenant.keys.sync,
      body: { data: [withdrawal(), { ...stored, quantity: 7 }] },
    });
    expect(refused.status).toBe(409);
    expect(await messagesOf(srv, tenant)).toHaveLength(2);

    await setEndpointDisabled(srv.storage.db, tenant.id, taker.id, "test", Date.now());
    await sync(srv, tenant, "withdrawals", [withdrawal()]);
    const messages = await messagesOf(srv, tenant);
    expect(messages).toHaveLength(3);
    expect(await messagesOf(srv, other)).toEqual([]);
    expect((await fanoutsOf(srv, tenant)).map((f) => [f.endpointId, f.messageIds])).toEqual([[taker.id, [messages[1]!.id]]]);
    expect(returnsOnly.id).not.toBe(taker.id);
  });
});

describe("webhook signatures", () => {
  it("verify with the Standard Webhooks reference library, with either secret during a rotation", () => {
    const [current, previous] = [newSecret(), newSecret()];
    expect(current).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    const body = JSON.stringify({ type: "withdrawal.created", timestamp: "2026-11-22T09:30:00.123Z", data: { id: "wd-1" } });
    const timestamp = Math.floor(Date.now() / 1000);
    const headers = webhookHeaders([current, previous], "msg_abc", timestamp, body);
    expect(Object.keys(headers)).toEqual(["webhook-id", "webhook-timestamp", "webhook-signature"]);
    expect(headers["webhook-signature"]).toMatch(/^v1,\S+ v1,\S+$/);
    for (const secret of [current, previous]) expect(new Webhook(secret).verify(body, headers)).toEqual(JSON.parse(body));
    expect(() => new Webhook(newSecret()).verify(body, headers)).toThrow();
    expect(() => new Webhook(current).verify(`${body} `, headers)).toThrow();
  });
});

describe("message and delivery ids", () => {
  it("are unique and sort by the time they were made, within the bounds idTime gives", () => {
    const times = [0, 1, 1_795_341_600_000, 1_795_341_600_000, 1_795_341_600_001, 253_402_300_799_999];
    const ids = times.map((t) => newId("dlv_", t));
    expect(new Set(ids).size).toBe(ids.length);
    expect([...ids].sort()).toEqual(ids);
    for (const [i, t] of times.entries()) {
      if (t >= 36 ** 9) continue; // beyond nine base-36 digits: clamped
      expect(ids[i]! >= idTime("dlv_", t)).toBe(true);
      expect(ids[i]! < idTime("dlv_", t + 1)).toBe(true);
    }
    expect(idTime("dlv_", -5)).toBe("dlv_000000000");
  });
});
