/** The contract's list rules and error table, for every collection, over HTTP. */
import { TypeCompiler } from "@sinclair/typebox/compiler";
import { describe, expect, it } from "vitest";
import { findCollection } from "../src/collections/registry.js";
import { sortKeysFoldFinalSigmaMigration } from "../src/storage/migrations/0006-sort-keys-fold-final-sigma.js";
import { EVENT_FIELD, FACTORIES, MASTER_COLLECTIONS, TRANSACTION_COLLECTIONS, costCenter } from "./support/factories.js";
import { get, newTenant, readAll, request, sync, useServer } from "./support/harness.js";

const server = useServer();
const ALL = [...TRANSACTION_COLLECTIONS, ...MASTER_COLLECTIONS];

async function tenantWith(collection: string, records: Record<string, unknown>[]) {
  const tenant = await newTenant(server());
  await sync(server(), tenant, collection, records);
  return tenant;
}

describe.each(ALL)("GET /v1/%s", (collection) => {
  const make = FACTORIES[collection]!;

  it("returns data and cursor only, newest first, with cursor null on the last page", async () => {
    const tenant = await newTenant(server());
    server().clock.now = 1_700_000_000_000;
    await sync(server(), tenant, collection, [make({ id: "a" }), make({ id: "b" })]);
    server().clock.now = 1_700_000_000_500;
    await sync(server(), tenant, collection, [make({ id: "c" })]);
    server().clock.now = undefined;
    const first = await get(server(), `/v1/${collection}?limit=2`, tenant.keys.read);
    expect(first.status).toBe(200);
    expect(Object.keys(first.body).sort()).toEqual(["cursor", "data"]);
    expect(first.body.data.map((r: { id: string }) => r.id)).toEqual(["c", "b"]);
    expect(first.body.data[0].createdAt).toBe("2023-11-14T22:13:20.500Z");
    expect(typeof first.body.cursor).toBe("string");
    const second = await get(server(), `/v1/${collection}?limit=2&cursor=${encodeURIComponent(first.body.cursor)}`, tenant.keys.read);
    expect(second.body).toEqual({ data: [expect.objectContaining({ id: "a" })], cursor: null });
  });

  it("gives cursor null when the page is exactly full and nothing follows", async () => {
    const tenant = await tenantWith(collection, [make(), make()]);
    const reply = await get(server(), `/v1/${collection}?limit=2`, tenant.keys.read);
    expect(reply.body.data).toHaveLength(2);
    expect(reply.body.cursor).toBeNull();
  });

  it("defaults limit to 20", async () => {
    const tenant = await tenantWith(
      collection,
      Array.from({ length: 25 }, () => make()),
    );
    const reply = await get(server(), `/v1/${collection}`, tenant.keys.read);
    expect(reply.body.data).toHaveLength(20);
    expect(reply.body.cursor).not.toBeNull();
  });

  it("accepts limit 1 and 100", async () => {
    const tenant = await tenantWith(collection, [make(), make()]);
    expect((await get(server(), `/v1/${collection}?limit=1`, tenant.keys.read)).body.data).toHaveLength(1);
    expect((await get(server(), `/v1/${collection}?limit=100`, tenant.keys.read)).body.data).toHaveLength(2);
  });

  it.each(["0", "-1", "101", "1.5", "abc", "1e2", " 5", "0x10", "+5", "99999999"])("refuses limit=%s with 400", async (limit) => {
    const tenant = await newTenant(server());
    const reply = await get(server(), `/v1/${collection}?limit=${encodeURIComponent(limit)}`, tenant.keys.read);
    expect(reply.status).toBe(400);
    expect(reply.body).toMatchObject({ status: 400, code: "invalid_limit", param: "limit" });
    expect(reply.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  });

  it.each(["Limit", "utm_source", "LIMIT", "sort", "order", "offset", "page", "createdAt"])(
    "refuses the unknown parameter %s with the exact message",
    async (name) => {
      const tenant = await newTenant(server());
      const reply = await get(server(), `/v1/${collection}?${name}=1`, tenant.keys.read);
      expect(reply.status).toBe(400);
      expect(reply.body.detail).toBe(`unknown filter parameter "${name}"`);
      expect(reply.body).toMatchObject({ code: "unknown_parameter", param: name });
    },
  );

  it("refuses repeated and empty parameters", async () => {
    const tenant = await newTenant(server());
    const repeated = await get(server(), `/v1/${collection}?limit=5&limit=6`, tenant.keys.read);
    expect(repeated.status).toBe(400);
    expect(repeated.body.code).toBe("repeated_parameter");
    const empty = await get(server(), `/v1/${collection}?name=`, tenant.keys.read);
    expect(empty.status).toBe(400);
    expect(empty.body.code).toBe("empty_parameter");
  });

  it.each([
    ["garbage", "not-a-cursor"],
    ["empty-looking", "e30"],
    ["base64 junk", "eyJhIjoxfQ!!"],
  ])("refuses a %s cursor with 400", async (_label, cursor) => {
    const tenant = await newTenant(server());
    const reply = await get(server(), `/v1/${collection}?cursor=${encodeURIComponent(cursor)}`, tenant.keys.read);
    expect(reply.status).toBe(400);
    expect(reply.body.code).toBe("invalid_cursor");
  });

  it("refuses a truncated, corrupted or re-bound cursor", async () => {
    const tenant = await tenantWith(collection, [make(), make(), make()]);
    const { cursor } = (await get(server(), `/v1/${collection}?limit=1`, tenant.keys.read)).body;
    const flipped = cursor.slice(0, 5) + (cursor[5] === "A" ? "B" : "A") + cursor.slice(6);
    for (const bad of [cursor.slice(0, -1), cursor.slice(0, cursor.length / 2), flipped, `${cursor}A`]) {
      const reply = await get(server(), `/v1/${collection}?limit=1&cursor=${encodeURIComponent(bad)}`, tenant.keys.read);
      expect(reply.status, bad).toBe(400);
      expect(reply.body.code).toBe("invalid_cursor");
    }
    const otherFilters = await get(server(), `/v1/${collection}?limit=1&name=j&cursor=${encodeURIComponent(cursor)}`, tenant.keys.read);
    expect(otherFilters.status).toBe(400);
    const otherList = collection === "withdrawals" ? "returns" : "withdrawals";
    const crossList = await get(server(), `/v1/${otherList}?limit=1&cursor=${encodeURIComponent(cursor)}`, tenant.keys.read);
    expect(crossList.status).toBe(400);
    const otherLimit = await get(server(), `/v1/${collection}?limit=2&cursor=${encodeURIComponent(cursor)}`, tenant.keys.read);
    expect(otherLimit.status).toBe(200);
  });

  it("refuses a cursor of another tenant", async () => {
    const owner = await tenantWith(collection, [make(), make()]);
    const other = await tenantWith(collection, [make(), make()]);
    const { cursor } = (await get(server(), `/v1/${collection}?limit=1`, owner.keys.read)).body;
    const reply = await get(server(), `/v1/${collection}?limit=1&cursor=${encodeURIComponent(cursor)}`, other.keys.read);
    expect(reply.status).toBe(400);
    expect(reply.body.code).toBe("invalid_cursor");
    // A tenant with no records at all gets the same answer, not an empty page.
    const empty = await newTenant(server());
    const fromEmpty = await get(server(), `/v1/${collection}?limit=1&cursor=${encodeURIComponent(cursor)}`, empty.keys.read);
    expect(fromEmpty.status).toBe(400);
    expect(fromEmpty.body.code).toBe("invalid_cursor");
  });

  it("sees only its own tenant's records", async () => {
    const mine = await tenantWith(collection, [make({ id: "shared-id" })]);
    await tenantWith(collection, [make({ id: "shared-id" }), make()]);
    const { items } = await readAll(server(), mine.keys.read, `/v1/${collection}`);
    expect(items.map((r) => r.id)).toEqual(["shared-id"]);
  });

  it("filters by name prefix, case-insensitively, anchored, in ascending name order", async () => {
    const nameField = TRANSACTION_COLLECTIONS.includes(collection) ? "employeeName" : "name";
    const names = ["ana Souza", "Ana Luíza", "ÂNGELA", "Mariana", "anabela", "Bruno", "ana"];
    const tenant = await tenantWith(
      collection,
      names.map((name, i) => make({ id: `n${i}`, [nameField]: name })),
    );
    const { items } = await readAll(server(), tenant.keys.read, `/v1/${collection}?name=ANA`, [2]);
    expect(items.map((r) => r[nameField])).toEqual(["ana", "Ana Luíza", "ana Souza", "anabela"]);
  });

  it("matches a prefix whatever the letters around it (final sigma, dotted capital I)", async () => {
    const nameField = TRANSACTION_COLLECTIONS.includes(collection) ? "employeeName" : "name";
    const tenant = await tenantWith(collection, [
      make({ id: "greek", [nameField]: "ΟΔΟΣΑ Π" }),
      make({ id: "turkish", [nameField]: "İsmail" }),
      make({ id: "final", [nameField]: "Νικόλαος Παπαδόπουλος" }),
      make({ id: "upper", [nameField]: "ΓΙΏΡΓΟΣ ΝΙΚΟΛΆΟΥ" }),
    ]);
    for (const [prefix, id] of [
      ["ΟΔΟΣ", "greek"],
      ["οδοσα", "greek"],
      ["ΟΔΟ", "greek"],
      ["ΝΙΚΌΛΑΟΣ", "final"],
      ["νικόλαοσ π", "final"],
      ["Νικόλαος", "final"],
      ["Γιώργος", "upper"],
      ["γιώργος ν", "upper"],
      ["İs", "turkish"],
      ["İ", "turkish"],
    ] as const) {
      const { items } = await readAll(server(), tenant.keys.read, `/v1/${collection}?name=${encodeURIComponent(prefix)}`);
      expect(
        items.map((r) => r.id),
        prefix,
      ).toEqual([id]);
    }
  });

  it("treats LIKE wildcards in name as plain text", async () => {
    const nameField = TRANSACTION_COLLECTIONS.includes(collection) ? "employeeName" : "name";
    const tenant = await tenantWith(collection, [
      make({ [nameField]: "100% cotton" }),
      make({ [nameField]: "1000 gloves" }),
      make({ [nameField]: "a_b" }),
      make({ [nameField]: "axb" }),
    ]);
    expect((await readAll(server(), tenant.keys.read, `/v1/${collection}?name=${encodeURIComponent("100%")}`)).items).toHaveLength(1);
    expect((await readAll(server(), tenant.keys.read, `/v1/${collection}?name=a_`)).items).toHaveLength(1);
  });

  it("returns items that match the documented item schema, optional fields null", async () => {
    const schema = TypeCompiler.Compile(findCollection(collection)!.item);
    const optional = findCollection(collection)!.optional;
    const bare = make(Object.fromEntries(optional.map((field) => [field, undefined])));
    const nameField = findCollection(collection)!.nameField;
    const tenant = await tenantWith(collection, [make({ [nameField]: 'Zoë "quoted" \\ name' }), bare]);
    const { items } = await readAll(server(), tenant.keys.read, `/v1/${collection}`);
    expect(items).toHaveLength(2);
    for (const item of items) expect([...schema.Errors(item)].map((e) => `${e.path}: ${e.message}`)).toEqual([]);
    const stored = items.find((r) => r.id === bare.id);
    for (const field of optional) expect(stored[field]).toBeNull();
  });

  it("has no total or count field", async () => {
    const tenant = await tenantWith(collection, [make()]);
    const reply = await get(server(), `/v1/${collection}`, tenant.keys.read);
    expect(reply.body).not.toHaveProperty("total");
    expect(reply.body).not.toHaveProperty("count");
  });
});

describe.each(TRANSACTION_COLLECTIONS)("time window on GET /v1/%s", (collection) => {
  const make = FACTORIES[collection]!;
  const field = EVENT_FIELD[collection]!;

  it("matches the event date, inclusive at both ends, not createdAt", async () => {
    const tenant = await tenantWith(collection, [
      make({ id: "before", [field]: "2026-01-01T09:59:59.999Z" }),
      make({ id: "start", [field]: "2026-01-01T10:00:00.000Z" }),
      make({ id: "inside", [field]: "2026-01-01T12:00:00+01:00" }),
      make({ id: "end", [field]: "2026-01-01T12:00:00.000Z" }),
      make({ id: "after", [field]: "2026-01-01T12:00:00.001Z" }),
    ]);
    const window = "createdSince=2026-01-01T10:00:00Z&createdUntil=2026-01-01T12:00:00Z";
    const { items } = await readAll(server(), tenant.keys.read, `/v1/${collection}?${window}`, [1]);
    expect(items.map((r) => r.id).sort()).toEqual(["end", "inside", "start"]);
    const since = await readAll(server(), tenant.keys.read, `/v1/${collection}?createdSince=2026-01-01T12:00:00Z`);
    expect(since.items.map((r) => r.id).sort()).toEqual(["after", "end"]);
    const until = await readAll(server(), tenant.keys.read, `/v1/${collection}?createdUntil=2026-01-01T10:00:00Z`);
    expect(until.items.map((r) => r.id).sort()).toEqual(["before", "start"]);
    const now = new Date().toISOString();
    const byCreation = await readAll(server(), tenant.keys.read, `/v1/${collection}?createdSince=${now}`);
    expect(byCreation.items).toEqual([]);
  });

  it("keeps the newest-first order inside a window", async () => {
    const tenant = await newTenant(server());
    server().clock.now = 1_800_000_000_000;
    await sync(server(), tenant, collection, [make({ id: "old", [field]: "2026-03-01T10:00:00Z" })]);
    server().clock.now = 1_800_000_001_000;
    await sync(server(), tenant, collection, [make({ id: "new", [field]: "2026-02-01T10:00:00Z" })]);
    server().clock.now = undefined;
    const { items } = await readAll(server(), tenant.keys.read, `/v1/${collection}?createdSince=2026-01-01T00:00:00Z`);
    expect(items.map((r) => r.id)).toEqual(["new", "old"]);
  });

  it("accepts a fraction of any length, compared to the nanosecond, in the window and in sync", async () => {
    const tenant = await tenantWith(collection, [make({ id: "at", [field]: "2026-01-01T10:00:00.1230000009999Z" })]);
    const ids = async (query: string) => (await readAll(server(), tenant.keys.read, `/v1/${collection}?${query}`)).items.map((r) => r.id);
    expect((await readAll(server(), tenant.keys.read, `/v1/${collection}`)).items[0]![field]).toBe("2026-01-01T10:00:00.123Z");
    expect(await ids(`createdSince=${encodeURIComponent("2026-01-01T10:00:00.1230000000001Z")}`)).toEqual(["at"]);
    expect(await ids(`createdSince=${encodeURIComponent("2026-01-01T10:00:00.1230000019999Z")}`)).toEqual([]);
    expect(await ids(`createdUntil=${encodeURIComponent("2026-01-01T10:00:00.12299999999999Z")}`)).toEqual([]);
    expect(await ids(`createdUntil=${encodeURIComponent("2026-01-01T11:00:00.12300000000000+01:00")}`)).toEqual(["at"]);
  });

  it.each([
    "2026-01-01",
    "2026-01-01T10:00:00",
    "2026-01-01T10:00Z",
    "2026-01-01 10:00:00Z",
    "2026-02-29T10:00:00Z",
    "2026-01-01T24:00:00Z",
    "2026-01-01T10:00:00+0300",
    "2026-13-01T10:00:00Z",
    "1700000000",
    "yesterday",
  ])("refuses createdSince=%s with 400", async (value) => {
    const tenant = await newTenant(server());
    for (const param of ["createdSince", "createdUntil"]) {
      const reply = await get(server(), `/v1/${collection}?${param}=${encodeURIComponent(value)}`, tenant.keys.read);
      expect(reply.status).toBe(400);
      expect(reply.body).toMatchObject({ code: "invalid_time", param });
    }
  });

  it("refuses createdSince later than createdUntil and accepts them equal", async () => {
    const tenant = await newTenant(server());
    const later = await get(
      server(),
      `/v1/${collection}?createdSince=2026-01-02T00:00:00Z&createdUntil=2026-01-01T00:00:00Z`,
      tenant.keys.read,
    );
    expect(later.status).toBe(400);
    expect(later.body.code).toBe("invalid_time_window");
    const offsetLater = await get(
      server(),
      `/v1/${collection}?createdSince=2026-01-01T00:30:00%2B00:00&createdUntil=2026-01-01T01:00:00%2B01:00`,
      tenant.keys.read,
    );
    expect(offsetLater.status).toBe(400);
    const equal = await get(
      server(),
      `/v1/${collection}?createdSince=2026-01-01T00:00:00Z&createdUntil=2026-01-01T01:00:00%2B01:00`,
      tenant.keys.read,
    );
    expect(equal.status).toBe(200);
  });

  it.each(["employeeId", "productId", "costCenterId", "sectorId"])("refuses the window combined with %s", async (relation) => {
    const tenant = await newTenant(server());
    for (const window of ["createdSince=2026-01-01T00:00:00Z", "createdUntil=2026-01-01T00:00:00Z"]) {
      const reply = await get(server(), `/v1/${collection}?${window}&${relation}=x`, tenant.keys.read);
      expect(reply.status).toBe(400);
      expect(reply.body.code).toBe("window_with_relationship_filter");
    }
  });

  it("allows the window with a name filter", async () => {
    const tenant = await tenantWith(collection, [
      make({ employeeName: "Zoë", [field]: "2026-01-01T10:00:00Z" }),
      make({ employeeName: "Zoë", [field]: "2025-01-01T10:00:00Z" }),
    ]);
    const { items } = await readAll(server(), tenant.keys.read, `/v1/${collection}?name=zo&createdSince=2026-01-01T00:00:00Z`);
    expect(items).toHaveLength(1);
  });

  it.each(["employeeId", "productId", "costCenterId", "sectorId"])("filters by %s, and ANDs several filters", async (relation) => {
    const tenant = await tenantWith(collection, [
      make({ id: "match", [relation]: "X-1", sectorId: relation === "sectorId" ? "X-1" : "S-9" }),
      make({ id: "other", [relation]: "X-2", sectorId: relation === "sectorId" ? "X-2" : "S-9" }),
      make({ id: "third", [relation]: "X-1", sectorId: relation === "sectorId" ? "X-1" : "S-8" }),
    ]);
    const { items } = await readAll(server(), tenant.keys.read, `/v1/${collection}?${relation}=X-1`);
    expect(items.map((r) => r.id).sort()).toEqual(relation === "sectorId" ? ["match", "third"] : ["match", "third"]);
    if (relation !== "sectorId") {
      const both = await readAll(server(), tenant.keys.read, `/v1/${collection}?${relation}=X-1&sectorId=S-9`);
      expect(both.items.map((r) => r.id)).toEqual(["match"]);
    }
  });

  it.each(["GET /x1", "POST ", "PUT ", "DELETE ", "PATCH ", "OPTIONS ", "PUT /x1", "DELETE /x1", "POST /x1", "OPTIONS /x1"])(
    "answers %s with 405 and Allow",
    async (call) => {
      const [method, suffix] = call.split(" ") as [string, string];
      const tenant = await newTenant(server());
      const reply = await request(server(), method, `/v1/${collection}${suffix}`, { key: tenant.keys.all });
      expect(reply.status).toBe(405);
      expect(reply.headers.has("allow")).toBe(true);
      expect(reply.body).toMatchObject({ status: 405, code: "method_not_allowed" });
      if (suffix === "") expect(reply.headers.get("allow")).toBe("GET, HEAD");
    },
  );
});

describe.each(ALL)("405 on /v1/%s comes before its body is read", (collection) => {
  const bodies: [string, string, string][] = [
    ["a form", "application/x-www-form-urlencoded", "a=1"],
    ["XML", "application/xml", "<a/>"],
    ["broken JSON", "application/json", '{"a":'],
    ["an empty JSON body", "application/json", ""],
    ["5 MiB", "application/json", `{"a":"${"x".repeat(5 * 1024 * 1024)}"}`],
  ];
  it.each(bodies)("answers POST, PUT and DELETE with %s with 405 and Allow", async (_label, type, rawBody) => {
    const tenant = await newTenant(server());
    for (const [method, suffix] of [
      ["POST", ""],
      ["PUT", ""],
      ["DELETE", ""],
      ...(TRANSACTION_COLLECTIONS.includes(collection)
        ? [
            ["PUT", "/x1"],
            ["DELETE", "/x1"],
          ]
        : []),
    ]) {
      const reply = await request(server(), method!, `/v1/${collection}${suffix}`, {
        key: tenant.keys.all,
        rawBody,
        headers: { "content-type": type },
      });
      expect([method, suffix, reply.status]).toEqual([method, suffix, 405]);
      expect(reply.headers.has("allow")).toBe(true);
    }
  });
});

describe("filters that only some lists accept", () => {
  it("refuses the window and code on master data, and code on other lists", async () => {
    const tenant = await newTenant(server());
    for (const collection of MASTER_COLLECTIONS) {
      const reply = await get(server(), `/v1/${collection}?createdSince=2026-01-01T00:00:00Z`, tenant.keys.read);
      expect(reply.body.detail).toBe('unknown filter parameter "createdSince"');
    }
    for (const collection of ALL.filter((c) => c !== "cost-centers")) {
      const reply = await get(server(), `/v1/${collection}?code=A`, tenant.keys.read);
      expect(reply.body.detail).toBe('unknown filter parameter "code"');
    }
    for (const [collection, param] of [
      ["employees", "employeeId"],
      ["employees", "productId"],
      ["products", "sectorId"],
      ["cost-centers", "costCenterId"],
    ] as const) {
      const reply = await get(server(), `/v1/${collection}?${param}=x`, tenant.keys.read);
      expect(reply.body.detail).toBe(`unknown filter parameter "${param}"`);
    }
  });

  it("filters employees by sectorId and costCenterId", async () => {
    const tenant = await tenantWith("employees", [
      FACTORIES.employees!({ id: "e1", sectorId: "s1", costCenterId: "c1" }),
      FACTORIES.employees!({ id: "e2", sectorId: "s1", costCenterId: "c2" }),
      FACTORIES.employees!({ id: "e3", sectorId: "s2", costCenterId: "c1" }),
    ]);
    expect((await readAll(server(), tenant.keys.read, "/v1/employees?sectorId=s1")).items.map((r) => r.id).sort()).toEqual(["e1", "e2"]);
    expect((await readAll(server(), tenant.keys.read, "/v1/employees?sectorId=s1&costCenterId=c1")).items.map((r) => r.id)).toEqual(["e1"]);
  });

  it("filters cost centers by code prefix in code order, and by name and code in name order", async () => {
    const tenant = await tenantWith("cost-centers", [
      costCenter({ id: "c1", code: "cc-20", name: "Zeta" }),
      costCenter({ id: "c2", code: "CC-10", name: "Alpha" }),
      costCenter({ id: "c3", code: "DD-10", name: "Alpha two" }),
      costCenter({ id: "c4", code: "cc-15", name: "Beta" }),
    ]);
    const byCode = await readAll(server(), tenant.keys.read, "/v1/cost-centers?code=CC", [1]);
    expect(byCode.items.map((r) => r.id)).toEqual(["c2", "c4", "c1"]);
    const both = await readAll(server(), tenant.keys.read, "/v1/cost-centers?code=cc&name=a", [1]);
    expect(both.items.map((r) => r.id)).toEqual(["c2"]);
  });
});

describe("errors", () => {
  it("answers unknown paths with a 404 problem and every response with a request id", async () => {
    const reply = await get(server(), "/v1/nothing-here");
    expect(reply.status).toBe(404);
    expect(reply.body).toMatchObject({ status: 404, code: "not_found" });
    expect(reply.headers.get("x-request-id")).toMatch(/.+/);
    const kept = await request(server(), "GET", "/healthz", { headers: { "x-request-id": "abc-123" } });
    expect(kept.headers.get("x-request-id")).toBe("abc-123");
  });

  it("answers what the router refuses as problems with a request id", async () => {
    const tenant = await newTenant(server());
    for (const [path, status] of [
      ["/v1/withdrawals%zz", 400],
      [`/v1/withdrawals/${"a".repeat(2000)}`, 404],
    ] as const) {
      const reply = await get(server(), path, tenant.keys.read);
      expect(reply.status, path).toBe(status);
      expect(reply.headers.get("content-type"), path).toMatch(/^application\/problem\+json/);
      expect(reply.headers.get("x-request-id"), path).toMatch(/.+/);
      expect(reply.body.code, path).toMatch(/^(bad_request|not_found)$/);
    }
    const longId = await get(server(), `/v1/withdrawals/${"a".repeat(300)}`, tenant.keys.read);
    expect(longId.status).toBe(405);
  });

  it("keeps the problem shape for every 4xx", async () => {
    const tenant = await newTenant(server());
    const reply = await get(server(), "/v1/withdrawals?limit=0", tenant.keys.read);
    expect(Object.keys(reply.body).sort()).toEqual(["code", "detail", "param", "status", "title", "type"]);
  });
});

describe("migration 0006: sort keys stored before the final sigma was folded", () => {
  it.each([
    ["withdrawals", "withdrawals", "employeeName", "name"],
    ["employees", "employees", "name", "name"],
    ["cost-centers", "cost_centers", "code", "code"],
  ] as const)("recomputes the %s keys, so that a prefix in another case finds them", async (collection, table, field, filter) => {
    const tenant = await tenantWith(collection, [FACTORIES[collection]!({ id: "old", [field]: "Νικόλαος" })]);
    const column = filter === "name" ? "name_key" : "code_key";
    // As a cribline before the fold stored it.
    await server()
      .storage.db.updateTable(table)
      .set({ [column]: "νικόλαος" })
      .where("tenant_id", "=", tenant.id)
      .execute();
    const found = async () =>
      (await readAll(server(), tenant.keys.read, `/v1/${collection}?${filter}=${encodeURIComponent("ΝΙΚΌΛΑΟΣ")}`)).items;
    expect(await found()).toEqual([]);
    await sortKeysFoldFinalSigmaMigration().up(server().storage.db as never);
    expect((await found()).map((r) => r.id)).toEqual(["old"]);
  });
});
