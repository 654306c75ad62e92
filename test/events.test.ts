/**
 * The events list, GET /v1/events and GET /v1/events/{id} (README, "Events"): every change of a
 * tenant's records, newest first, each with the record as its list showed it then; paged, filtered
 * and refused like every list; within the retention period only; written with its change or not
 * at all.
 */
import { sql } from "kysely";
import { describe, expect, it } from "vitest";
import { COLLECTIONS } from "../src/collections/registry.js";
import { EVENT_TYPES } from "../src/webhooks/events.js";
import { employee, FACTORIES, withdrawal } from "./support/factories.js";
import { get, newTenant, readAll, request, sync, useServer, type TestTenant } from "./support/harness.js";

const server = useServer();
const DAY = 24 * 60 * 60 * 1000;

const events = (tenant: TestTenant, query = "") => get(server(), `/v1/events${query}`, tenant.keys.read);

describe("GET /v1/events", () => {
  it("lists every change newest first, each with the record as its list showed it, and nothing for an unchanged re-send", async () => {
    const tenant = await newTenant(server());
    const taken = withdrawal();
    await sync(server(), tenant, "withdrawals", [taken]);
    const person = employee({ name: "Ana" });
    await sync(server(), tenant, "employees", [person]);
    const created = (await get(server(), "/v1/employees", tenant.keys.read)).body.data[0];
    await sync(server(), tenant, "employees", [person]);
    await sync(server(), tenant, "employees", [{ ...person, name: "Ana Maria" }]);
    const updated = (await get(server(), "/v1/employees", tenant.keys.read)).body.data[0];

    const reply = await events(tenant);
    expect(reply.status).toBe(200);
    expect(reply.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(Object.keys(reply.body)).toEqual(["data", "cursor"]);
    expect(reply.body.cursor).toBeNull();
    const listed = (await get(server(), "/v1/withdrawals", tenant.keys.read)).body.data[0];
    expect(reply.body.data.map((e: any) => [e.type, e.data])).toEqual([
      ["employee.updated", updated],
      ["employee.created", created],
      ["withdrawal.created", listed],
    ]);
    for (const event of reply.body.data) {
      expect(Object.keys(event)).toEqual(["id", "type", "createdAt", "data"]);
      expect(event.id).toMatch(/^msg_/);
      expect(event.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    }
    const times = reply.body.data.map((e: any) => e.createdAt);
    expect([...times].sort().reverse()).toEqual(times);
    // Each one reads alone as it reads in the list.
    for (const event of reply.body.data) expect((await get(server(), `/v1/events/${event.id}`, tenant.keys.read)).body).toEqual(event);
  });

  it("has an event type for every change of every collection, and the data each list shows", async () => {
    const tenant = await newTenant(server());
    const seen = new Set<string>();
    for (const collection of COLLECTIONS) {
      const record = FACTORIES[collection.name]!();
      await sync(server(), tenant, collection.name, [record]);
      if (collection.kind === "master") await sync(server(), tenant, collection.name, [{ ...record, name: `${String(record.name)} 2` }]);
      const item = (await get(server(), `/v1/${collection.name}`, tenant.keys.read)).body.data[0];
      const newest = (await events(tenant, "?limit=1")).body.data[0];
      expect(newest.data).toEqual(item);
      seen.add(newest.type);
      if (collection.kind === "master") seen.add(`${collection.singular}.created`);
    }
    expect([...seen].sort()).toEqual([...EVENT_TYPES].sort());
    expect((await readAll(server(), tenant.keys.read, "/v1/events")).items).toHaveLength(EVENT_TYPES.length);
  });

  it("pages by a signed cursor bound to its filters and tenant, with any limit, missing nothing", async () => {
    const tenant = await newTenant(server());
    const other = await newTenant(server());
    await sync(
      server(),
      tenant,
      "withdrawals",
      Array.from({ length: 25 }, () => withdrawal()),
    );
    await sync(
      server(),
      tenant,
      "employees",
      Array.from({ length: 12 }, () => employee()),
    );
    await sync(server(), other, "withdrawals", [withdrawal()]);
    const all = (await readAll(server(), tenant.keys.read, "/v1/events", [100])).items;
    expect(all).toHaveLength(37);
    for (const limits of [[1], [7, 3], [36]]) {
      const paged = await readAll(server(), tenant.keys.read, "/v1/events", limits);
      expect(paged.items).toEqual(all);
    }
    const byType = (await readAll(server(), tenant.keys.read, "/v1/events?type=employee.created", [5])).items;
    expect(byType).toEqual(all.filter((e: any) => e.type === "employee.created"));

    const first = await events(tenant, "?limit=5&type=withdrawal.created");
    const cursor = encodeURIComponent(first.body.cursor);
    expect((await events(tenant, `?limit=5&type=withdrawal.created&cursor=${cursor}`)).status).toBe(200);
    for (const changed of [`?cursor=${cursor}`, `?type=employee.created&cursor=${cursor}`]) {
      const refused = await events(tenant, changed);
      expect([refused.status, refused.body.code], changed).toEqual([400, "invalid_cursor"]);
    }
    const foreign = await get(server(), `/v1/events?limit=5&type=withdrawal.created&cursor=${cursor}`, other.keys.read);
    expect([foreign.status, foreign.body.code]).toEqual([400, "invalid_cursor"]);
    const listCursor = (await get(server(), "/v1/withdrawals?limit=1", tenant.keys.read)).body.cursor;
    expect((await events(tenant, `?cursor=${encodeURIComponent(listCursor)}`)).body.code).toBe("invalid_cursor");
  });

  it("filters by the event's own time, inclusive at both ends", async () => {
    const tenant = await newTenant(server());
    const start = Date.now() - 60_000;
    try {
      for (const offset of [0, 1000, 2000, 3000]) {
        server().clock.now = start + offset;
        await sync(server(), tenant, "withdrawals", [withdrawal({ deliveredAt: "2020-01-01T00:00:00Z" })]);
      }
    } finally {
      server().clock.now = undefined;
    }
    const at = (offset: number) => new Date(start + offset).toISOString();
    const window = async (query: string) =>
      (await readAll(server(), tenant.keys.read, `/v1/events?${query}`, [1])).items.map((e: any) => e.createdAt);
    expect(await window(`createdSince=${at(1000)}&createdUntil=${at(2000)}`)).toEqual([at(2000), at(1000)]);
    expect(await window(`createdSince=${at(2001)}`)).toEqual([at(3000)]);
    expect(await window(`createdUntil=${at(999)}`)).toEqual([at(0)]);
    expect(await window(`createdSince=${at(1000)}&createdUntil=${at(1000)}`)).toEqual([at(1000)]);
    // The same instant written with an offset, `+` escaped.
    const offsetForm = new Date(start + 1000 + 3_600_000).toISOString().replace("Z", "%2B01:00");
    expect(await window(`createdSince=${offsetForm}&createdUntil=${offsetForm}`)).toEqual([at(1000)]);
  });

  it.each([
    ["?type=withdrawal.deleted", "invalid_parameter", "type", "withdrawal.created, "],
    ["?type=Withdrawal.created", "invalid_parameter", "type", "employee.updated"],
    ["?createdSince=2026-11-22", "invalid_time", "createdSince", "RFC 3339"],
    ["?createdUntil=2026-11-22T10:00:00", "invalid_time", "createdUntil", "RFC 3339"],
    ["?createdSince=2026-11-22T10:00:01Z&createdUntil=2026-11-22T10:00:00Z", "invalid_time_window", "createdSince", "earlier"],
    ["?limit=0", "invalid_limit", "limit", "1 to 100"],
    ["?limit=101", "invalid_limit", "limit", "1 to 100"],
    ["?type=", "empty_parameter", "type", "empty"],
    ["?limit=2&limit=3", "repeated_parameter", "limit", "repeated"],
    ["?cursor=junk", "invalid_cursor", "cursor", "invalid"],
    ["?Type=withdrawal.created", "unknown_parameter", "Type", 'unknown filter parameter "Type"'],
    ["?employeeId=e-1", "unknown_parameter", "employeeId", 'unknown filter parameter "employeeId"'],
  ])("refuses %s with 400 %s", async (query, code, param, detail) => {
    const tenant = await newTenant(server());
    await sync(server(), tenant, "withdrawals", [withdrawal()]);
    const reply = await events(tenant, query);
    expect(reply.status).toBe(400);
    expect(reply.headers.get("content-type")).toMatch(/^application\/problem\+json/);
    expect(reply.body).toMatchObject({ status: 400, code, param });
    expect(reply.body.detail).toContain(detail);
  });

  it("names every event type when the type is unknown", async () => {
    const reply = await events(await newTenant(server()), "?type=ping");
    for (const type of EVENT_TYPES) expect(reply.body.detail).toContain(type);
  });

  it("answers 405 to other methods, with Allow", async () => {
    const tenant = await newTenant(server());
    for (const path of ["/v1/events", "/v1/events/msg_x"]) {
      const reply = await request(server(), "POST", path, { key: tenant.keys.all, body: {} });
      expect([reply.status, reply.headers.get("allow")], path).toEqual([405, "GET, HEAD"]);
      expect((await request(server(), "DELETE", path, { key: tenant.keys.all })).status).toBe(405);
    }
  });
});

describe("GET /v1/events/{id}", () => {
  it("answers 404 for another tenant's event, an unknown id and one that is not an event id", async () => {
    const [tenant, other] = [await newTenant(server()), await newTenant(server())];
    await sync(server(), tenant, "withdrawals", [withdrawal()]);
    const [event] = (await events(tenant)).body.data;
    expect((await get(server(), `/v1/events/${event.id}`, tenant.keys.read)).status).toBe(200);
    const unknown = `${event.id.slice(0, -1)}${event.id.endsWith("A") ? "B" : "A"}`;
    for (const [key, id] of [
      [other.keys.read, event.id],
      [tenant.keys.read, unknown],
      [tenant.keys.read, "wd-1"],
    ] as const) {
      const reply = await get(server(), `/v1/events/${id}`, key);
      expect([reply.status, reply.body.code], id).toEqual([404, "not_found"]);
    }
  });
});

describe("the retention period", () => {
  it("shows no event older than CRIBLINE_EVENT_RETENTION_DAYS (30), in the list or alone, before the sweeper removes it", async () => {
    const tenant = await newTenant(server());
    const now = Date.now();
    try {
      server().clock.now = now - 31 * DAY;
      await sync(server(), tenant, "withdrawals", [withdrawal()]);
      server().clock.now = now - 29 * DAY;
      await sync(server(), tenant, "withdrawals", [withdrawal()]);
    } finally {
      server().clock.now = undefined;
    }
    const stored = await server()
      .storage.db.selectFrom("webhook_messages")
      .select("id")
      .where("tenant_id", "=", tenant.id)
      .orderBy("id")
      .execute();
    expect(stored).toHaveLength(2);
    const listed = (await events(tenant)).body.data;
    expect(listed.map((e: any) => e.id)).toEqual([stored[1]!.id]);
    expect((await get(server(), `/v1/events/${stored[0]!.id}`, tenant.keys.read)).status).toBe(404);
    // A window reaching past the retention period shows what is kept.
    const since = new Date(now - 60 * DAY).toISOString();
    expect((await events(tenant, `?createdSince=${since}`)).body.data.map((e: any) => e.id)).toEqual([stored[1]!.id]);
  });
});

describe("an event and its change", () => {
  it("are written together or not at all", async () => {
    const tenant = await newTenant(server());
    const { db, engine } = server().storage;
    // The event's insert fails, for this tenant only.
    const triggers =
      engine.name === "sqlite"
        ? [
            `create trigger fail_events before insert on webhook_messages when new.tenant_id = ${tenant.id} begin select raise(abort, 'disk full'); end`,
          ]
        : [
            `create function fail_events() returns trigger language plpgsql as $$ begin raise exception 'disk full'; end $$`,
            `create trigger fail_events before insert on webhook_messages for each row when (new.tenant_id = ${tenant.id}) execute function fail_events()`,
          ];
    for (const statement of triggers) await sql.raw(statement).execute(db);
    const record = withdrawal();
    try {
      const refused = await request(server(), "POST", "/v1/sync/withdrawals", { key: tenant.keys.sync, body: { data: [record] } });
      expect([refused.status, refused.body.code]).toEqual([500, "internal_error"]);
    } finally {
      await sql.raw(engine.name === "sqlite" ? "drop trigger fail_events" : "drop function fail_events() cascade").execute(db);
    }
    expect((await get(server(), "/v1/withdrawals", tenant.keys.read)).body.data).toEqual([]);
    expect((await events(tenant)).body.data).toEqual([]);
    await sync(server(), tenant, "withdrawals", [record]);
    expect((await events(tenant)).body.data.map((e: any) => e.data.id)).toEqual([record.id]);
  });
});

describe("polling while syncs of several lists commit", () => {
  it("a poller that reads newest first and stops at the last event it saw misses none and sees none twice", async () => {
    const tenant = await newTenant(server());
    const people = Array.from({ length: 10 }, () => employee());
    await sync(server(), tenant, "employees", people);
    const seen: string[] = [];
    let last: string | undefined;
    /** One poll: pages newest first until the last event seen; returns how many were new. */
    const poll = async () => {
      const fresh: string[] = [];
      let cursor: string | null = null;
      do {
        const reply: any = await events(tenant, `?limit=20${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`);
        expect(reply.status).toBe(200);
        const ids: string[] = reply.body.data.map((e: any) => e.id);
        const stop = last === undefined ? -1 : ids.indexOf(last);
        fresh.push(...(stop === -1 ? ids : ids.slice(0, stop)));
        cursor = stop === -1 ? reply.body.cursor : null;
      } while (cursor !== null);
      if (fresh.length > 0) last = fresh[0];
      seen.push(...fresh);
      return fresh.length;
    };
    await poll();
    const writer = async (collection: string, make: (n: number) => Record<string, unknown>[]) => {
      for (let n = 0; n < 40; n += 1) {
        await sync(server(), tenant, collection, make(n));
        // Room for the poller between batches, so that it reads while they commit.
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    };
    const writing = Promise.all([
      writer("withdrawals", () => Array.from({ length: 20 }, () => withdrawal())),
      writer("returns", () => Array.from({ length: 15 }, () => FACTORIES.returns!())),
      writer("employees", (n) => people.map((p) => ({ ...p, name: `${String(p.name)} ${n}` }))),
      writer("products", () => Array.from({ length: 5 }, () => FACTORIES.products!())),
    ]);
    let writersDone = false;
    void writing.then(
      () => (writersDone = true),
      () => (writersDone = true),
    );
    let polls = 0;
    while (!writersDone) {
      await poll();
      polls += 1;
    }
    await writing;
    await poll();
    const all = (await readAll(server(), tenant.keys.read, "/v1/events")).items.map((e: any) => e.id);
    expect(new Set(seen).size).toBe(seen.length);
    expect([...seen].sort()).toEqual([...all].sort());
    expect(all).toHaveLength(10 + 40 * (20 + 15 + 10 + 5));
    expect(polls).toBeGreaterThan(3);
  });
});
