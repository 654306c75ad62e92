/**
 * Sync (README: "What a client must know", Sync): counts, idempotence, conflicts, upserts, atomicity, the
 * errors that name each offending record and field, times, and the body rules, over HTTP.
 */
import { request as httpRequest } from "node:http";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { EVENT_FIELD, FACTORIES, MASTER_COLLECTIONS, TRANSACTION_COLLECTIONS, returnRecord, withdrawal } from "./support/factories.js";
import { COLLECTIONS } from "../src/collections/registry.js";
import { toStoredContent } from "../src/collections/record.js";
import { writeBatch } from "../src/sync/sync.service.js";
import { MAX_FIELDS_REPORTED } from "../src/sync/sync.validate.js";
import { get, newTenant, readAll, request, sync, useServer, type Reply, type TestTenant } from "./support/harness.js";

const server = useServer();
const ALL = [...TRANSACTION_COLLECTIONS, ...MASTER_COLLECTIONS];
const UTC_MILLIS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Fields the collections declare optional (missing or null: stored and returned as null). */
const OPTIONAL: Record<string, string[]> = {
  withdrawals: [],
  returns: ["condition"],
  exchanges: ["reason"],
  "training-records": ["productId", "expiresAt"],
  employees: ["registration"],
  "cost-centers": [],
  sectors: [],
  products: ["sku"],
  devices: ["location"],
};

/** The text field each collection's name filter uses: a required field we can vary freely. */
const nameField = (collection: string) => (TRANSACTION_COLLECTIONS.includes(collection) ? "employeeName" : "name");
const isTransaction = (collection: string) => TRANSACTION_COLLECTIONS.includes(collection);

type Rec = Record<string, unknown>;

const post = (tenant: TestTenant, collection: string, body: unknown) =>
  request(server(), "POST", `/v1/sync/${collection}`, { key: tenant.keys.sync, body });

const postRaw = (tenant: TestTenant, collection: string, rawBody: string | Uint8Array, contentType = "application/json") =>
  request(server(), "POST", `/v1/sync/${collection}`, { key: tenant.keys.sync, rawBody, headers: { "content-type": contentType } });

/** fetch always labels a string body text/plain; node:http can send one with no Content-Type. */
function postWithoutContentType(tenant: TestTenant, collection: string, rawBody: string): Promise<Reply<any>> {
  const url = new URL(`${server().url}/v1/sync/${collection}`);
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      { host: url.hostname, port: url.port, path: url.pathname, method: "POST", headers: { authorization: `Bearer ${tenant.keys.sync}` } },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => (text += chunk));
        res.on("end", () => {
          const headers = new Headers();
          for (const [name, value] of Object.entries(res.headers)) if (typeof value === "string") headers.set(name, value);
          resolve({ status: res.statusCode!, headers, body: text === "" ? undefined : JSON.parse(text) });
        });
      },
    );
    req.on("error", reject);
    req.end(rawBody);
  });
}

const send = (tenant: TestTenant, collection: string, data: unknown[]) => post(tenant, collection, { data });

async function listAll(tenant: TestTenant, collection: string): Promise<Rec[]> {
  return (await readAll(server(), tenant.keys.read, `/v1/${collection}`)).items;
}

async function byId(tenant: TestTenant, collection: string): Promise<Map<string, Rec>> {
  return new Map((await listAll(tenant, collection)).map((r) => [r.id as string, r]));
}

/** Runs `action` with the server clock pinned to `ms`. */
async function at<T>(ms: number, action: () => Promise<T>): Promise<T> {
  server().clock.now = ms;
  try {
    return await action();
  } finally {
    server().clock.now = undefined;
  }
}

/** Every error is problem+json with status, title, detail and code. */
function expectProblem(reply: Reply<any>, status: number, code: string): void {
  expect(reply.status, JSON.stringify(reply.body)).toBe(status);
  expect(reply.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  expect(reply.body).toMatchObject({ status, code, title: expect.any(String), detail: expect.any(String) });
  expect(reply.body.title).not.toBe("");
  expect(reply.body.detail).not.toBe("");
}

/** The (index, field) pairs of a 400 invalid_records, sorted. */
function offending(reply: Reply<any>): string[] {
  expectProblem(reply, 400, "invalid_records");
  expect(Array.isArray(reply.body.errors)).toBe(true);
  for (const error of reply.body.errors)
    expect(error).toMatchObject({ index: expect.any(Number), field: expect.any(String), message: expect.any(String) });
  return reply.body.errors.map((e: { index: number; field: string }) => `${e.index}:${e.field}`).sort();
}

/** What a stored record is listed as: what was sent, plus the times cribline assigns. */
function sentFields(record: Rec): Rec {
  return Object.fromEntries(Object.entries(record).filter(([k]) => k !== "createdAt" && k !== "updatedAt"));
}

describe.each(ALL)("POST /v1/sync/%s", (collection) => {
  const make = FACTORIES[collection]!;
  const name = nameField(collection);
  const definition = COLLECTIONS.find((c) => c.name === collection)!;

  it("answers created, updated and unchanged counts", async () => {
    const tenant = await newTenant(server());
    const [a, b, c] = [make({ id: "a" }), make({ id: "b" }), make({ id: "c" })];
    const first = await send(tenant, collection, [a, b, c]);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ created: 3, updated: 0, unchanged: 0 });
    const batch = [a, make({ id: "d" }), make({ id: "e" }), b];
    const second = await send(tenant, collection, batch);
    expect(second.body).toEqual({ created: 2, updated: 0, unchanged: 2 });
    expect([...(await byId(tenant, collection)).keys()].sort()).toEqual(["a", "b", "c", "d", "e"]);
    if (!isTransaction(collection)) {
      const third = await send(tenant, collection, [{ ...a, [name]: "Renamed" }, b, make({ id: "f" })]);
      expect(third.body).toEqual({ created: 1, updated: 1, unchanged: 1 });
    }
  });

  it("stores records exactly as sent, with a createdAt", async () => {
    const tenant = await newTenant(server());
    const record = make();
    await at(1_800_000_000_123, () => sync(server(), tenant, collection, [record]));
    const [listed] = await listAll(tenant, collection);
    expect(sentFields(listed!)).toEqual(record);
    expect(listed!.createdAt).toBe("2027-01-15T08:00:00.123Z");
    if (!isTransaction(collection)) expect(listed!.updatedAt).toBe("2027-01-15T08:00:00.123Z");
  });

  it("counts a name repeated within one JSON object with its last value, as documented", async () => {
    const tenant = await newTenant(server());
    const record = make({ [name]: "First" });
    const json = JSON.stringify(record);
    const reply = await postRaw(tenant, collection, `{"data":[${json.slice(0, -1)},${JSON.stringify(name)}:"Last"}]}`);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    const [listed] = await listAll(tenant, collection);
    expect(sentFields(listed!)).toEqual({ ...record, [name]: "Last" });
  });

  it("changes nothing when the same batch is sent again", async () => {
    const tenant = await newTenant(server());
    const batch = [make(), make(), make()];
    await at(1_800_000_000_000, () => sync(server(), tenant, collection, batch));
    const before = await listAll(tenant, collection);
    const again = await at(1_800_000_900_000, () => send(tenant, collection, batch));
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ created: 0, updated: 0, unchanged: 3 });
    expect(await listAll(tenant, collection)).toEqual(before);
    expect(before.every((r) => r.createdAt === "2027-01-15T08:00:00.000Z")).toBe(true);
  });

  it("keeps tenants apart: the same id in two tenants is two records", async () => {
    const one = await newTenant(server());
    const two = await newTenant(server());
    expect((await send(one, collection, [make({ id: "same", [name]: "One" })])).body).toEqual({ created: 1, updated: 0, unchanged: 0 });
    expect((await send(two, collection, [make({ id: "same", [name]: "Two" })])).body).toEqual({ created: 1, updated: 0, unchanged: 0 });
    expect((await listAll(one, collection)).map((r) => r[name])).toEqual(["One"]);
    expect((await listAll(two, collection)).map((r) => r[name])).toEqual(["Two"]);
  });

  it("applies nothing of a batch that holds one invalid record", async () => {
    const tenant = await newTenant(server());
    const stored = make({ id: "stored", [name]: "Before" });
    await sync(server(), tenant, collection, [stored]);
    const before = await listAll(tenant, collection);
    const batch = [make({ id: "new-1" }), { ...stored, [name]: "After" }, make({ id: "new-2" }), make({ id: "bad", [name]: 42 })];
    expect(offending(await send(tenant, collection, batch))).toEqual([`3:${name}`]);
    expect(await listAll(tenant, collection)).toEqual(before);
  });

  it("names every offending index and field of a batch, and applies none of it", async () => {
    const tenant = await newTenant(server());
    const batch: Rec[] = [];
    const expected: string[] = [];
    const add = (record: Rec, ...fields: string[]) => {
      for (const field of fields) expected.push(`${batch.length}:${field}`);
      batch.push(record);
    };
    const missing = make();
    delete missing[name];
    add(make()); // valid
    add(missing, name);
    add(make({ [name]: 42 }), name);
    add(make({ colour: "red" }), "colour");
    add(make({ id: "has space" }), "id");
    add(make({ id: "" }), "id");
    add(make({ id: "x".repeat(65) }), "id");
    add(make({ [name]: "Ana\u0007" }), name);
    add(make({ [name]: "" }), name);
    add(make({ createdAt: "2026-01-01T00:00:00.000Z" }), "createdAt");
    add(make({ updatedAt: "2026-01-01T00:00:00.000Z" }), "updatedAt");
    add(make({ id: 7 }), "id");
    add(make({ [name]: 42, colour: "red", id: "a b" }), name, "colour", "id");
    add(make({ [name]: null }), name);
    if (isTransaction(collection)) {
      const event = EVENT_FIELD[collection]!;
      add(make({ [event]: "2026-02-30T10:00:00Z" }), event);
      add(make({ [event]: "2026-01-01" }), event);
      add(make({ [event]: "2026-01-01T24:00:00Z" }), event);
      add(make({ [event]: 1_767_261_600_000 }), event);
      add(make({ employeeId: "emp 1" }), "employeeId");
    }
    if (collection !== "training-records" && isTransaction(collection)) {
      add(make({ quantity: 0 }), "quantity");
      add(make({ quantity: -1 }), "quantity");
      add(make({ quantity: 1.5 }), "quantity");
      add(make({ quantity: "1" }), "quantity");
    }
    if (collection === "returns") add(make({ condition: "broken" }), "condition");
    if (collection === "employees") add(make({ active: "yes" }), "active");
    if (collection === "cost-centers") add(make({ code: "C\u0000" }), "code");
    add(make()); // valid
    const reply = await send(tenant, collection, batch);
    expect(offending(reply)).toEqual([...expected].sort());
    expect(reply.body.detail).toMatch(/\d+/);
    expect(await listAll(tenant, collection)).toEqual([]);
  });

  it("says what a time, an id, a text or a choice field takes, optional fields included", async () => {
    const tenant = await newTenant(server());
    const kinds = [
      { bad: "2026-02-30T10:00:00Z", message: /^must be an RFC 3339 date-time/, is: (s: any) => s.format === "date-time" },
      { bad: "a b", message: /^must be 1 to 64 characters from/, is: (s: any) => s.pattern !== undefined },
      { bad: "a\u0007", message: /^must be text without control characters$/, is: (s: any) => s.format === "text" },
      { bad: "broken", message: /^must be one of "/, is: (s: any) => s.anyOf?.every((m: any) => m.const !== undefined) === true },
    ];
    const batch: Rec[] = [];
    const expected: { index: number; field: string; message: RegExp }[] = [];
    for (const [field, schema] of Object.entries(definition.input.properties) as [string, any][]) {
      const plain = schema.anyOf?.find((s: any) => s.type !== "null") ?? schema;
      const kind = kinds.find((k) => k.is(plain));
      if (kind === undefined) continue;
      expected.push({ index: batch.length, field, message: kind.message });
      batch.push(make({ [field]: kind.bad }));
    }
    // Optional fields are nullable unions: each is checked too.
    expect(expected.map((e) => e.field).filter((field) => OPTIONAL[collection]!.includes(field))).toEqual(OPTIONAL[collection]);
    const reply = await send(tenant, collection, batch);
    expectProblem(reply, 400, "invalid_records");
    for (const { index, field, message } of expected) {
      const error = reply.body.errors.find((e: any) => e.index === index && e.field === field);
      expect(error?.message, `${index}:${field} in ${JSON.stringify(reply.body.errors)}`).toMatch(message);
    }
  });

  it.each(["a/b", "c~d", "", "x.y", " ", "__proto__x"])("names the unknown field %j exactly as sent, once", async (field) => {
    const tenant = await newTenant(server());
    const record = make();
    record[field] = 1;
    const reply = await send(tenant, collection, [record]);
    expect(offending(reply)).toEqual([`0:${field}`]);
  });

  it("refuses an id that appears twice in one batch and applies nothing", async () => {
    const tenant = await newTenant(server());
    const record = make({ id: "twice" });
    const reply = await send(tenant, collection, [make(), record, make(), { ...record }]);
    expect(offending(reply)).toEqual(["3:id"]);
    expect(await listAll(tenant, collection)).toEqual([]);
    // Even with other content the second occurrence is named, and nothing is stored.
    const differing = await send(tenant, collection, [record, { ...record, [name]: "Other" }]);
    expect(offending(differing)).toEqual(["1:id"]);
    expect(await listAll(tenant, collection)).toEqual([]);
  });

  it("accepts 1000 records in one batch", async () => {
    const tenant = await newTenant(server());
    const batch = Array.from({ length: 1000 }, () => make());
    const reply = await send(tenant, collection, batch);
    expect(reply.body).toEqual({ created: 1000, updated: 0, unchanged: 0 });
    const items = await listAll(tenant, collection);
    expect(new Set(items.map((r) => r.id))).toEqual(new Set(batch.map((r) => r.id)));
  });

  it("keeps nothing of a batch whose insert fails after hundreds of rows were written", async () => {
    const tenant = await newTenant(server());
    const stored = make({ id: "stored" });
    await sync(server(), tenant, collection, [stored]);
    const before = await listAll(tenant, collection);
    const contents = Array.from({ length: 1000 }, () => toStoredContent(definition, make()));
    // Past the first 500-row statement, a row the database refuses (a constraint that the
    // API's validation keeps any request from breaking): the 700 rows before it were written.
    contents[700] = { ...contents[700]!, name_key: null as unknown as string };
    await expect(writeBatch(server().storage.db, definition, tenant.id, contents)).rejects.toThrow(/NOT NULL|null value/i);
    expect(await listAll(tenant, collection)).toEqual(before);
    // Nothing is left half done: the same records, valid, are all created afterwards.
    contents[700] = toStoredContent(definition, make());
    const outcome = await writeBatch(server().storage.db, definition, tenant.id, contents);
    expect([outcome.created.length, outcome.unchanged]).toEqual([1000, 0]);
  });

  it("returns createdAt (and updatedAt) in UTC with milliseconds", async () => {
    const tenant = await newTenant(server());
    await sync(server(), tenant, collection, [make()]);
    const [listed] = await listAll(tenant, collection);
    expect(listed!.createdAt).toMatch(UTC_MILLIS);
    if (!isTransaction(collection)) expect(listed!.updatedAt).toMatch(UTC_MILLIS);
    else expect(listed).not.toHaveProperty("updatedAt");
  });
});

describe.each(TRANSACTION_COLLECTIONS)("POST /v1/sync/%s: transactions never change", (collection) => {
  const make = FACTORIES[collection]!;
  const name = nameField(collection);

  it("refuses the same id with other content with 409 naming the ids, and applies nothing", async () => {
    const tenant = await newTenant(server());
    const [a, b, c] = [make({ id: "a" }), make({ id: "b" }), make({ id: "c" })];
    await at(1_800_000_000_000, () => sync(server(), tenant, collection, [a, b, c]));
    const before = await listAll(tenant, collection);
    const batch = [make({ id: "new" }), { ...a, [name]: "Changed" }, b, { ...c, [EVENT_FIELD[collection]!]: "2020-01-01T00:00:00.000Z" }];
    const reply = await at(1_800_000_500_000, () => send(tenant, collection, batch));
    expectProblem(reply, 409, "conflict");
    expect([...reply.body.ids].sort()).toEqual(["a", "c"]);
    const after = await listAll(tenant, collection);
    expect(after).toEqual(before);
    expect(after.map((r) => r.id)).not.toContain("new");
  });

  const optional = OPTIONAL[collection]![0];
  const changes: [string, (r: Rec) => Rec][] = [
    ["another relationship id", (r) => ({ ...r, sectorId: "sec-9" })],
    ["a name differing only in case", (r) => ({ ...r, [name]: String(r[name]).toUpperCase() })],
    ["a name with a trailing space", (r) => ({ ...r, [name]: `${String(r[name])} ` })],
    ["an event date one millisecond later", (r) => ({ ...r, [EVENT_FIELD[collection]!]: "2026-11-01T08:00:00.001Z" })],
    ...(optional === undefined
      ? []
      : [["an optional field set to null", (r: Rec) => ({ ...r, [optional]: null })] as [string, (r: Rec) => Rec]]),
    ...(collection === "training-records" ? [] : [["another quantity", (r: Rec) => ({ ...r, quantity: 2 })] as [string, (r: Rec) => Rec]]),
  ];

  it.each(changes)("treats %s as other content", async (_label, change) => {
    const tenant = await newTenant(server());
    const record = make({ id: "x" });
    await sync(server(), tenant, collection, [record]);
    const before = await listAll(tenant, collection);
    const reply = await send(tenant, collection, [change(record)]);
    expectProblem(reply, 409, "conflict");
    expect(reply.body.ids).toEqual(["x"]);
    expect(await listAll(tenant, collection)).toEqual(before);
  });
});

describe.each(MASTER_COLLECTIONS)("POST /v1/sync/%s: master data is upserted", (collection) => {
  const make = FACTORIES[collection]!;
  const name = nameField(collection);
  const T1 = Date.UTC(2026, 0, 1, 10, 0, 0, 1);
  const T2 = Date.UTC(2026, 0, 2, 10, 0, 0, 2);
  const T3 = Date.UTC(2026, 0, 3, 10, 0, 0, 3);

  it("moves updatedAt forward even when the writing process's clock is behind the last change's", async () => {
    const tenant = await newTenant(server());
    const record = make({ id: "m", [name]: "One" });
    await at(T1, () => sync(server(), tenant, collection, [record]));
    await at(T3, () => sync(server(), tenant, collection, [{ ...record, [name]: "Two" }]));
    // Another process, its clock a day behind the one that wrote "Two".
    await at(T2, () => sync(server(), tenant, collection, [{ ...record, [name]: "Three" }]));
    const [listed] = await listAll(tenant, collection);
    expect(listed).toMatchObject({ [name]: "Three", createdAt: new Date(T1).toISOString(), updatedAt: new Date(T3 + 1).toISOString() });
  });

  it("updates changed content: updatedAt moves, createdAt stays", async () => {
    const tenant = await newTenant(server());
    const record = make({ id: "m", [name]: "Before" });
    await at(T1, () => sync(server(), tenant, collection, [record]));
    const reply = await at(T2, () => send(tenant, collection, [{ ...record, [name]: "After" }]));
    expect(reply.body).toEqual({ created: 0, updated: 1, unchanged: 0 });
    const [listed] = await listAll(tenant, collection);
    expect(listed).toMatchObject({
      id: "m",
      [name]: "After",
      createdAt: new Date(T1).toISOString(),
      updatedAt: new Date(T2).toISOString(),
    });
  });

  it("keeps updatedAt when the same content is sent again", async () => {
    const tenant = await newTenant(server());
    const record = make({ id: "m", [name]: "Before" });
    await at(T1, () => sync(server(), tenant, collection, [record]));
    await at(T2, () => sync(server(), tenant, collection, [{ ...record, [name]: "After" }]));
    const again = await at(T3, () => send(tenant, collection, [{ ...record, [name]: "After" }]));
    expect(again.body).toEqual({ created: 0, updated: 0, unchanged: 1 });
    const [listed] = await listAll(tenant, collection);
    expect(listed).toMatchObject({ createdAt: new Date(T1).toISOString(), updatedAt: new Date(T2).toISOString() });
  });

  it("keeps newest-first order by createdAt after an update", async () => {
    const tenant = await newTenant(server());
    const old = make({ id: "old" });
    await at(T1, () => sync(server(), tenant, collection, [old]));
    await at(T2, () => sync(server(), tenant, collection, [make({ id: "young" })]));
    await at(T3, () => sync(server(), tenant, collection, [{ ...old, [name]: "Touched" }]));
    expect((await listAll(tenant, collection)).map((r) => r.id)).toEqual(["young", "old"]);
  });

  it("applies nothing of a batch with an update and an invalid record", async () => {
    const tenant = await newTenant(server());
    const record = make({ id: "m", [name]: "Before" });
    await at(T1, () => sync(server(), tenant, collection, [record]));
    const reply = await at(T2, () => send(tenant, collection, [{ ...record, [name]: "After" }, make({ id: "bad id" })]));
    expect(offending(reply)).toEqual(["1:id"]);
    const [listed] = await listAll(tenant, collection);
    expect(listed).toMatchObject({ [name]: "Before", updatedAt: new Date(T1).toISOString() });
  });
});

describe.each(ALL.filter((c) => OPTIONAL[c]!.length > 0))("optional fields of /v1/sync/%s", (collection) => {
  const make = FACTORIES[collection]!;
  const fields = OPTIONAL[collection]!;

  it("stores a missing or null optional field as null and returns it as null", async () => {
    const tenant = await newTenant(server());
    const missing = make({ id: "missing" });
    for (const field of fields) delete missing[field];
    const nulled = make({ id: "nulled", ...Object.fromEntries(fields.map((f) => [f, null])) });
    expect((await send(tenant, collection, [missing, nulled])).body).toEqual({ created: 2, updated: 0, unchanged: 0 });
    const stored = await byId(tenant, collection);
    for (const id of ["missing", "nulled"]) {
      for (const field of fields) {
        expect(stored.get(id), `${id}.${field}`).toHaveProperty(field, null);
      }
    }
  });

  it("treats missing and null as the same content", async () => {
    const tenant = await newTenant(server());
    const missing = make({ id: "r" });
    for (const field of fields) delete missing[field];
    await sync(server(), tenant, collection, [missing]);
    const nulled = { ...missing, ...Object.fromEntries(fields.map((f) => [f, null])) };
    expect((await send(tenant, collection, [nulled])).body).toEqual({ created: 0, updated: 0, unchanged: 1 });
  });

  it("still validates an optional field when it is present", async () => {
    const tenant = await newTenant(server());
    const reply = await send(
      tenant,
      collection,
      fields.map((field) => make({ [field]: 12 })),
    );
    expect(offending(reply)).toEqual(fields.map((field, index) => `${index}:${field}`).sort());
  });
});

describe.each(TRANSACTION_COLLECTIONS)("times sent to /v1/sync/%s", (collection) => {
  const make = FACTORIES[collection]!;
  const event = EVENT_FIELD[collection]!;

  it("returns an offset time normalised to UTC with milliseconds", async () => {
    const tenant = await newTenant(server());
    const extra = collection === "training-records" ? { expiresAt: "2027-11-22T10:15:30.5-03:00" } : {};
    await sync(server(), tenant, collection, [make({ id: "t", [event]: "2026-11-22T10:15:30+02:00", ...extra })]);
    const [listed] = await listAll(tenant, collection);
    expect(listed![event]).toBe("2026-11-22T08:15:30.000Z");
    if (collection === "training-records") expect(listed!.expiresAt).toBe("2027-11-22T13:15:30.500Z");
  });

  it.each([
    "2026-11-22T08:15:30Z",
    "2026-11-22T08:15:30.000Z",
    "2026-11-22T05:15:30-03:00",
    "2026-11-22T08:15:30+00:00",
    "2026-11-22T13:45:30.0+05:30",
  ])("treats the same instant written as %s as unchanged", async (sameInstant) => {
    const tenant = await newTenant(server());
    const record = make({ id: "t", [event]: "2026-11-22T10:15:30+02:00" });
    await sync(server(), tenant, collection, [record]);
    const reply = await send(tenant, collection, [{ ...record, [event]: sameInstant }]);
    expect(reply.status, JSON.stringify(reply.body)).toBe(200);
    expect(reply.body).toEqual({ created: 0, updated: 0, unchanged: 1 });
  });

  it("treats another instant as other content", async () => {
    const tenant = await newTenant(server());
    const record = make({ id: "t", [event]: "2026-11-22T10:15:30+02:00" });
    await sync(server(), tenant, collection, [record]);
    const reply = await send(tenant, collection, [{ ...record, [event]: "2026-11-22T10:15:30Z" }]);
    expectProblem(reply, 409, "conflict");
  });

  it("accepts a leap day of a leap year at its last millisecond", async () => {
    const tenant = await newTenant(server());
    const reply = await send(tenant, collection, [make({ id: "leap", [event]: "2028-02-29T23:59:59.999Z" })]);
    expect(reply.body).toEqual({ created: 1, updated: 0, unchanged: 0 });
    expect((await listAll(tenant, collection))[0]![event]).toBe("2028-02-29T23:59:59.999Z");
  });
});

describe("times returned by the lists", () => {
  // The first and last millisecond of years 1 to 9999, of days and of 1970, and random instants.
  const EDGES = [-62135596800000, 253402300799999, -1, 0, 1, 86_399_999, 86_400_000, Date.UTC(2028, 1, 29, 23, 59, 59, 999)];

  it("returns every instant from year 1 to 9999 exactly, in UTC with milliseconds", async () => {
    const tenant = await newTenant(server());
    const instants = [...EDGES, ...fc.sample(fc.integer({ min: EDGES[0]!, max: EDGES[1]! }), 400)];
    const sent = instants.map((ms, i) => withdrawal({ id: `t${i}`, deliveredAt: new Date(ms).toISOString() }));
    await sync(server(), tenant, "withdrawals", sent);
    const listed = new Map((await listAll(tenant, "withdrawals")).map((record) => [record.id, record.deliveredAt]));
    expect(listed).toEqual(new Map(instants.map((ms, i) => [`t${i}`, new Date(ms).toISOString()])));
  });
});

describe.each(ALL)("body rules of POST /v1/sync/%s", (collection) => {
  const make = FACTORIES[collection]!;
  const named = nameField(collection);

  it.each(["{not json", '{"data": [', "", "data=1", '{"data": [] }}'])(
    "refuses the non-JSON body %j with 400 invalid_body",
    async (raw) => {
      const tenant = await newTenant(server());
      expectProblem(await postRaw(tenant, collection, raw), 400, "invalid_body");
    },
  );

  it.each<[string, unknown]>([
    ["an array", []],
    ["a string", "data"],
    ["a number", 1],
    ["null", null],
    ["an object without data", { records: [] }],
    ["data as an object", { data: {} }],
    ["data as a string", { data: "[]" }],
    ["data as null", { data: null }],
    ["a bare array of records", "BARE"],
  ])("refuses %s with 400 invalid_body", async (_label, body) => {
    const tenant = await newTenant(server());
    const reply = await post(tenant, collection, body === "BARE" ? [make()] : body);
    expectProblem(reply, 400, "invalid_body");
    expect(await listAll(tenant, collection)).toEqual([]);
  });

  it("refuses an empty data array and 1001 records with 400", async () => {
    const tenant = await newTenant(server());
    expectProblem(await send(tenant, collection, []), 400, "invalid_body");
    expectProblem(
      await send(
        tenant,
        collection,
        Array.from({ length: 1001 }, () => make()),
      ),
      400,
      "invalid_body",
    );
    expect(await listAll(tenant, collection)).toEqual([]);
  });

  it("refuses an extra top-level field with 400 and stores nothing", async () => {
    const tenant = await newTenant(server());
    expectProblem(await post(tenant, collection, { data: [make()], meta: { source: "x" } }), 400, "invalid_body");
    expect(await listAll(tenant, collection)).toEqual([]);
  });

  it("refuses a record that is not an object", async () => {
    const tenant = await newTenant(server());
    expect(offending(await send(tenant, collection, [make(), "record", null, [make()], 3]))).toEqual([
      "1:(record)",
      "2:(record)",
      "3:(record)",
      "4:(record)",
    ]);
    expect(await listAll(tenant, collection)).toEqual([]);
  });

  it("refuses a body larger than the limit with 413 and stores nothing", async () => {
    const tenant = await newTenant(server());
    const filler = "x".repeat(1024 * 1024);
    const reply = await post(tenant, collection, { data: [make({ padding: filler })] });
    expectProblem(reply, 413, "payload_too_large");
    expect(await listAll(tenant, collection)).toEqual([]);
  });

  it("accepts a body just under the limit and judges its records", async () => {
    const tenant = await newTenant(server());
    const reply = await post(tenant, collection, { data: [make({ padding: "x".repeat(1024 * 1024 - 2048) })] });
    expect(offending(reply)).toEqual(["0:padding"]);
  });

  it.each(["text/plain", "application/x-www-form-urlencoded", "application/xml", "multipart/form-data; boundary=x"])(
    "refuses Content-Type %s with 415",
    async (contentType) => {
      const tenant = await newTenant(server());
      const reply = await postRaw(tenant, collection, JSON.stringify({ data: [make()] }), contentType);
      expectProblem(reply, 415, "unsupported_media_type");
      expect(await listAll(tenant, collection)).toEqual([]);
    },
  );

  it("refuses a body without Content-Type with 415", async () => {
    const tenant = await newTenant(server());
    const reply = await postWithoutContentType(tenant, collection, JSON.stringify({ data: [make()] }));
    expectProblem(reply, 415, "unsupported_media_type");
    expect(await listAll(tenant, collection)).toEqual([]);
  });

  it.each(["application/json; charset=utf-8", 'application/json; charset="UTF-8"', "application/json;charset=utf8"])(
    "accepts %s",
    async (contentType) => {
      const tenant = await newTenant(server());
      const reply = await postRaw(tenant, collection, JSON.stringify({ data: [make({ [named]: "João Gonçalves" })] }), contentType);
      expect(reply.body).toEqual({ created: 1, updated: 0, unchanged: 0 });
      expect((await listAll(tenant, collection)).map((r) => r[named])).toEqual(["João Gonçalves"]);
    },
  );

  // Node would decode the bytes that are not UTF-8 as U+FFFD and store that; a transaction
  // stored so could never be corrected (a re-send with other content is a 409).
  it("refuses a body that is not valid UTF-8 with 400 and stores nothing", async () => {
    const tenant = await newTenant(server());
    const latin1 = Buffer.from(JSON.stringify({ data: [make({ [named]: "Jo\u00e3o Gon\u00e7alves" })] }), "latin1");
    const reply = await postRaw(tenant, collection, latin1);
    expectProblem(reply, 400, "invalid_body");
    expect(reply.body.detail).toMatch(/UTF-8/);
    expect(await listAll(tenant, collection)).toEqual([]);
  });

  it.each(["iso-8859-1", "latin1", "windows-1252", "utf-16"])("refuses a body declared as charset=%s with 415", async (charset) => {
    const tenant = await newTenant(server());
    const reply = await postRaw(tenant, collection, JSON.stringify({ data: [make()] }), `application/json; charset=${charset}`);
    expectProblem(reply, 415, "unsupported_media_type");
    expect(reply.body.detail).toContain(charset);
    expect(await listAll(tenant, collection)).toEqual([]);
  });
});

describe("other sync routes", () => {
  it("answers an unknown collection with 404", async () => {
    const tenant = await newTenant(server());
    expectProblem(await send(tenant, "widgets", [{ id: "w" }]), 404, "not_found");
  });

  it.each(["GET", "PUT", "PATCH", "DELETE"])("answers %s on a sync endpoint with 405 and Allow: POST", async (method) => {
    const tenant = await newTenant(server());
    const reply = await request(server(), method, "/v1/sync/withdrawals", { key: tenant.keys.all });
    expectProblem(reply, 405, "method_not_allowed");
    expect(reply.headers.get("allow")).toBe("POST");
  });

  it("does not answer a sync request with its records: only counts", async () => {
    const tenant = await newTenant(server());
    const reply = await send(tenant, "withdrawals", [FACTORIES.withdrawals!()]);
    expect(Object.keys(reply.body).sort()).toEqual(["created", "unchanged", "updated"]);
    expect((await get(server(), "/v1/withdrawals", tenant.keys.read)).body.data).toHaveLength(1);
  });
});

describe("sync errors of a large batch", () => {
  it("names every offending record of 1000, and at most MAX_FIELDS_REPORTED fields of one, with the count of all", async () => {
    const tenant = await newTenant(server());
    const batch: Rec[] = Array.from({ length: 1000 }, (_, i) => withdrawal({ id: `w-${i}`, quantity: 0 }));
    const unknown = Array.from({ length: MAX_FIELDS_REPORTED + 5 }, (_, i) => `extra${i}`);
    batch[500] = { ...withdrawal({ id: "w-500" }), ...Object.fromEntries(unknown.map((field) => [field, 1])) };
    const reply = await send(tenant, "withdrawals", batch);
    const named = offending(reply);
    const quantities = Array.from({ length: 1000 }, (_, i) => i).filter((i) => i !== 500);
    expect(named.filter((pair) => pair.endsWith(":quantity"))).toEqual(quantities.map((i) => `${i}:quantity`).sort());
    expect(named.filter((pair) => pair.startsWith("500:"))).toHaveLength(MAX_FIELDS_REPORTED);
    expect(reply.body.detail).toContain(`${999 + unknown.length} invalid field(s)`);
    expect(reply.body.detail).toContain(`the first ${MAX_FIELDS_REPORTED} of a record are listed`);
    expect(await listAll(tenant, "withdrawals")).toEqual([]);
  });

  it("says nothing of a limit when every field is listed", async () => {
    const tenant = await newTenant(server());
    const reply = await send(tenant, "withdrawals", [withdrawal({ id: "a", quantity: 0, colour: "red" })]);
    expect(offending(reply)).toEqual(["0:colour", "0:quantity"]);
    expect(reply.body.detail).toBe("2 invalid field(s) in the batch; nothing was applied");
  });

  it("names every one of 1000 transactions re-sent with other content", async () => {
    const tenant = await newTenant(server());
    const batch = Array.from({ length: 1000 }, (_, i) => withdrawal({ id: `w-${i}`, quantity: 1 }));
    await sync(server(), tenant, "withdrawals", batch);
    const reply = await send(
      tenant,
      "withdrawals",
      batch.map((r) => ({ ...r, quantity: 2 })),
    );
    expectProblem(reply, 409, "conflict");
    expect([...reply.body.ids].sort()).toEqual(batch.map((r) => r.id).sort());
  });
});

describe("createdAt never goes backwards", () => {
  it("stamps a batch after every earlier one of its list, even when the clock steps back", async () => {
    const tenant = await newTenant(server());
    const t = Date.UTC(2026, 10, 1, 12, 0, 0, 0);
    server().clock.now = t;
    await sync(server(), tenant, "withdrawals", [withdrawal({ id: "first" })]);
    server().clock.now = t - 10_000;
    await sync(server(), tenant, "withdrawals", [withdrawal({ id: "after-clock-step" })]);
    server().clock.now = t - 10_000;
    await sync(server(), tenant, "returns", [returnRecord({ id: "other-list" })]);
    server().clock.now = undefined;
    const { items } = await readAll(server(), tenant.keys.read, "/v1/withdrawals");
    expect(items.map((r) => [r.id, r.createdAt])).toEqual([
      ["after-clock-step", new Date(t + 1).toISOString()],
      ["first", new Date(t).toISOString()],
    ]);
    const returns = await readAll(server(), tenant.keys.read, "/v1/returns");
    expect(returns.items[0].createdAt).toBe(new Date(t - 10_000).toISOString());
  });
});
