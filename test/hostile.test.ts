/**
 * Hostile input, as properties (fast-check): whatever a client sends, cribline never answers
 * 5xx, answers every refusal with the documented problem shape, and stores nothing it refused.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { ERRORS } from "../src/platform/errors.js";
import { EVENT_FIELD, FACTORIES, MASTER_COLLECTIONS, TRANSACTION_COLLECTIONS } from "./support/factories.js";
import { get, newTenant, readAll, request, sync, useServer, type Reply, type TestTenant } from "./support/harness.js";

const server = useServer();
const ALL = [...TRANSACTION_COLLECTIONS, ...MASTER_COLLECTIONS];
const RELATIONS = ["employeeId", "productId", "costCenterId", "sectorId"];
const KNOWN_PARAMS = ["limit", "cursor", "name", "code", "createdSince", "createdUntil", ...RELATIONS];
const RUNS = { numRuns: 150 };

/** The parameters each list accepts (README: Filters, and the OpenAPI document). */
function accepted(collection: string): string[] {
  const params = ["limit", "cursor", "name"];
  if (collection === "cost-centers") params.push("code");
  if (TRANSACTION_COLLECTIONS.includes(collection)) params.push("createdSince", "createdUntil", ...RELATIONS);
  if (collection === "employees") params.push("sectorId", "costCenterId");
  return params;
}

/** A refusal: 4xx, problem+json, a known code whose status matches, a title and a detail. */
function expectProblem(reply: Reply<any>, statuses: number[]): void {
  expect(statuses, JSON.stringify(reply.body)).toContain(reply.status);
  expect(reply.headers.get("content-type")).toMatch(/^application\/problem\+json/);
  expect(reply.body).toMatchObject({
    status: reply.status,
    title: expect.any(String),
    detail: expect.any(String),
    code: expect.any(String),
  });
  expect(Object.keys(ERRORS)).toContain(reply.body.code);
  expect(ERRORS[reply.body.code as keyof typeof ERRORS].status).toBe(reply.status);
  expect(reply.body.detail.length).toBeGreaterThan(0);
}

/** Percent-encodes any string, lone surrogates included (as U+FFFD, like a browser). */
const enc = (text: string) => encodeURIComponent(text.toWellFormed());

async function tenantWith(collection: string, count: number): Promise<TestTenant> {
  const tenant = await newTenant(server());
  await sync(
    server(),
    tenant,
    collection,
    Array.from({ length: count }, () => FACTORIES[collection]!()),
  );
  return tenant;
}

async function storedIds(tenant: TestTenant, collection: string): Promise<string[]> {
  return (await readAll(server(), tenant.keys.read, `/v1/${collection}`)).items.map((r: { id: string }) => r.id);
}

// ---------------------------------------------------------------------------------------------
// Query strings

/** Known names with their letters' case flipped at random: `Limit`, `cURSOR`. */
const caseVariant = fc
  .tuple(fc.constantFrom(...KNOWN_PARAMS), fc.array(fc.boolean(), { minLength: 12, maxLength: 12 }))
  .map(([name, flips]) => [...name].map((c, i) => (flips[i] ? (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase()) : c)).join(""));

const RAW_PIECES = [
  "%ZZ",
  "%00",
  "%",
  "%2",
  "%E0%A4",
  "%C0%AF",
  "%ED%A0%80",
  "%FF",
  "%25",
  "+",
  "++",
  "%2B",
  "%26",
  "%3D",
  "=",
  "&",
  "&&",
  ";",
];

const rawPiece = fc.constantFrom(...RAW_PIECES);

const queryKey = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...KNOWN_PARAMS) },
  { weight: 2, arbitrary: caseVariant },
  { weight: 2, arbitrary: fc.string({ unit: "binary", maxLength: 12 }).map(enc) },
  {
    weight: 1,
    arbitrary: fc.constantFrom("lim%69t", "na%6De", "__proto__", "constructor", "limit[]", "utm_source", "%20limit", "limit%20"),
  },
  { weight: 1, arbitrary: fc.array(rawPiece, { minLength: 1, maxLength: 3 }).map((p) => p.join("")) },
);

const queryValue = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      "",
      "1",
      "20",
      "100",
      "0",
      "101",
      "-1",
      "1e2",
      "Ana",
      "x",
      "2026-01-01T00:00:00Z",
      "2026-01-01T00:00:00%2B02:00",
      "2026-01-01T00:00:00+02:00",
      "2026-02-30T00:00:00Z",
      "null",
      "%7B%7D",
      "emp-1",
    ),
  },
  { weight: 3, arbitrary: fc.string({ unit: "binary", maxLength: 30 }).map(enc) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 30 }) },
  {
    weight: 2,
    arbitrary: fc.array(fc.oneof(rawPiece, fc.string({ unit: "grapheme-ascii", maxLength: 3 })), { maxLength: 6 }).map((p) => p.join("")),
  },
  // Long, but under Node's 16 KiB header limit even when percent-encoded (see the explicit test below).
  { weight: 1, arbitrary: fc.integer({ min: 150, max: 6000 }).map((n) => "a".repeat(n)) },
  { weight: 1, arbitrary: fc.string({ unit: "binary", minLength: 100, maxLength: 400 }).map(enc) },
);

const queryToken = fc.oneof(
  { weight: 6, arbitrary: fc.tuple(queryKey, queryValue).map(([k, v]) => `${k}=${v}`) },
  { weight: 1, arbitrary: queryKey },
  { weight: 1, arbitrary: rawPiece },
);

const queryString = fc
  .tuple(fc.array(queryToken, { maxLength: 6 }), fc.constantFrom("&", "&&", "&&&"))
  .map(([tokens, separator]) => tokens.join(separator))
  // Several long values together could pass Node's 16 KiB limit on the request line, which is
  // a 431 of its own (tested explicitly below): keep the whole query, as sent, well under it.
  .filter((query) => new URL(`http://localhost/?${query}`).search.length <= 12_000);

describe("random query strings on every list", () => {
  it("answer 200 or a 400 problem, never 5xx, and refuse what the contract refuses", async () => {
    const tenants = new Map<string, TestTenant>();
    for (const collection of ALL) tenants.set(collection, await tenantWith(collection, 3));
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ALL), queryString, async (collection, query) => {
        const path = `/v1/${collection}?${query}`;
        const reply = await get(server(), path, tenants.get(collection)!.keys.read);
        expect(reply.status, path).toBeLessThan(500);
        // What the server sees: the query as the client's URL parser sent it, decoded alike.
        const pairs = [...new URL(`${server().url}${path}`).searchParams];
        const names = pairs.map(([name]) => name);
        const mustRefuse =
          names.some((name) => !accepted(collection).includes(name)) ||
          new Set(names).size !== names.length ||
          pairs.some(([, value]) => value === "");
        if (mustRefuse) expect(reply.status, path).toBe(400);
        if (reply.status === 200) {
          expect(Object.keys(reply.body).sort()).toEqual(["cursor", "data"]);
          expect(Array.isArray(reply.body.data)).toBe(true);
          expect(reply.body.cursor === null || typeof reply.body.cursor === "string").toBe(true);
          return;
        }
        expectProblem(reply, [400]);
        if (reply.body.code === "unknown_parameter") {
          expect(names).toContain(reply.body.param);
          expect(accepted(collection)).not.toContain(reply.body.param);
          expect(reply.body.detail).toBe(`unknown filter parameter "${reply.body.param}"`);
        }
        if (reply.body.param !== undefined) expect(names).toContain(reply.body.param);
      }),
      { numRuns: 400 },
    );
  });

  it.each(["%ZZ", "%00", "%", "%E0%A4", "+", "&&", "limit=1&&limit=2", "LIMIT=1&limit=1", "name=%00", "name=a%ZZ", "cursor=%ZZ"])(
    "answers the query %j without a 5xx",
    async (query) => {
      const tenant = await tenantWith("withdrawals", 1);
      const reply = await get(server(), `/v1/withdrawals?${query}`, tenant.keys.read);
      if (reply.status !== 200) expectProblem(reply, [400]);
    },
  );

  it("refuses a URL longer than the server accepts with a problem+json 4xx", async () => {
    const tenant = await newTenant(server());
    const reply = await get(server(), `/v1/withdrawals?cursor=${"x".repeat(20_000)}`, tenant.keys.read);
    expectProblem(reply, [400, 414, 431]);
  });
});

// ---------------------------------------------------------------------------------------------
// Cursors

const BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/** A cursor changed so that it is no longer the one the server issued. */
function mutatedCursor(real: string) {
  const bitFlip = fc
    .tuple(fc.nat({ max: real.length - 1 }), fc.integer({ min: 0, max: 6 }))
    .map(([at, bit]) => real.slice(0, at) + String.fromCharCode(real.charCodeAt(at) ^ (1 << bit)) + real.slice(at + 1));
  const truncated = fc
    .nat({ max: real.length - 1 })
    .filter((n) => n > 0)
    .map((n) => real.slice(0, n));
  const appended = fc.string({ unit: "binary", minLength: 1, maxLength: 8 }).map((s) => real + s);
  const prepended = fc.string({ unit: "binary", minLength: 1, maxLength: 8 }).map((s) => s + real);
  const replacedChar = fc
    .tuple(fc.nat({ max: real.length - 1 }), fc.constantFrom(...BASE64URL))
    .filter(([at, c]) => real[at] !== c)
    .map(([at, c]) => real.slice(0, at) + c + real.slice(at + 1));
  const swappedHalves = fc.constant(real.split(".").reverse().join("."));
  return fc.oneof(bitFlip, truncated, appended, prepended, replacedChar, swappedHalves);
}

const b64 = (text: string) => Buffer.from(text).toString("base64url");

/** Cursors nobody issued: random text, base64 of random JSON, forged payloads with random MACs. */
function forgedCursor(tenantId: number, collection: string) {
  const mac = fc.uint8Array({ minLength: 16, maxLength: 16 }).map((bytes) => Buffer.from(bytes).toString("base64url"));
  const payload = fc.record({
    v: fc.constantFrom(1, 2, "1"),
    t: fc.constantFrom(tenantId, tenantId + 1, 0, -1),
    c: fc.constantFrom(collection, "withdrawals", ""),
    f: fc.string({ maxLength: 16 }),
    k: fc.oneof(fc.integer(), fc.string()),
    i: fc.string({ maxLength: 10 }),
  });
  return fc.oneof(
    fc.string({ unit: "binary", minLength: 1, maxLength: 200 }),
    fc.json().map(b64),
    fc.tuple(fc.json(), mac).map(([json, m]) => `${b64(json)}.${m}`),
    fc.tuple(payload, mac).map(([p, m]) => `${b64(JSON.stringify(p))}.${m}`),
    fc.anything().map((v) => `${b64(String(JSON.stringify(v)))}.${"A".repeat(22)}`),
  );
}

describe.each(ALL)("hostile cursors on GET /v1/%s", (collection) => {
  async function realCursor() {
    const tenant = await tenantWith(collection, 3);
    const first = await get(server(), `/v1/${collection}?limit=1`, tenant.keys.read);
    const cursor: string = first.body.cursor;
    expect(typeof cursor).toBe("string");
    return { tenant, cursor };
  }

  async function expectRefused(tenant: TestTenant, cursor: string) {
    const reply = await get(server(), `/v1/${collection}?limit=1&cursor=${enc(cursor)}`, tenant.keys.read);
    expectProblem(reply, [400]);
    expect(reply.body).toMatchObject({ code: "invalid_cursor", param: "cursor" });
  }

  it("refuses mutated real cursors with 400 invalid_cursor", async () => {
    const { tenant, cursor } = await realCursor();
    expect((await get(server(), `/v1/${collection}?limit=1&cursor=${enc(cursor)}`, tenant.keys.read)).status).toBe(200);
    await fc.assert(
      fc.asyncProperty(mutatedCursor(cursor), (bad) => expectRefused(tenant, bad)),
      { numRuns: 40 },
    );
  });

  it("refuses forged and random cursors with 400 invalid_cursor", async () => {
    const { tenant } = await realCursor();
    await fc.assert(
      fc.asyncProperty(forgedCursor(tenant.id, collection), (bad) => expectRefused(tenant, bad)),
      { numRuns: 30 },
    );
  });

  it("refuses a cursor whose last character was replaced (the MAC's unused low bits included)", async () => {
    const { tenant, cursor } = await realCursor();
    for (const c of BASE64URL) {
      if (c === cursor.at(-1)) continue;
      await expectRefused(tenant, cursor.slice(0, -1) + c);
    }
  });
});

// ---------------------------------------------------------------------------------------------
// Sync bodies

const postRaw = (tenant: TestTenant, collection: string, rawBody: string) =>
  request(server(), "POST", `/v1/sync/${collection}`, { key: tenant.keys.sync, rawBody, headers: { "content-type": "application/json" } });

/** Values a hostile or buggy source might put in any field. */
const fieldValue = fc.oneof(
  fc.jsonValue({ maxDepth: 2 }),
  fc.string({ unit: "binary", maxLength: 40 }),
  fc.string({ unit: "grapheme", maxLength: 250 }),
  fc.integer(),
  fc.double(),
  fc.constantFrom(
    0,
    -1,
    1.5,
    1_000_000,
    1_000_001,
    "",
    " ",
    "\u0000",
    "a\u0007b",
    "\uD800",
    "x".repeat(201),
    "2026-02-30T10:00:00Z",
    "2026-01-01T10:00:00Z",
    "2026-01-01T10:00:00+02:00",
    "has space",
    "emp-1",
    true,
    null,
    [],
    {},
  ),
);

/** A valid record with some fields given random values, some removed and some added. */
function hostileRecord(collection: string) {
  const base = FACTORIES[collection]!();
  const fields = Object.keys(base);
  return fc
    .tuple(
      fc.dictionary(fc.constantFrom(...fields), fieldValue, { maxKeys: 4 }),
      fc.subarray(fields, { maxLength: 2 }),
      fc.dictionary(fc.string({ maxLength: 10 }), fieldValue, { maxKeys: 2 }),
    )
    .map(([replaced, removed, added]) => {
      const record: Record<string, unknown> = { ...base };
      for (const field of removed) delete record[field];
      Object.assign(record, replaced);
      for (const [key, value] of Object.entries(added))
        Object.defineProperty(record, key, { value, enumerable: true, writable: true, configurable: true });
      if (typeof replaced.id !== "string") record.id = FACTORIES[collection]!().id;
      const touched = new Set([...Object.keys(replaced), ...removed, ...Object.keys(added)]);
      return { record, touched };
    });
}

describe("random sync bodies", () => {
  it("refuses any random JSON value with a 400 problem and stores nothing", async () => {
    const tenant = await newTenant(server());
    const body = fc.oneof(
      fc.anything().map((v) => JSON.stringify(v) ?? ""),
      fc.json(),
      fc.anything().map((v) => JSON.stringify({ data: v }) ?? ""),
      fc.array(fc.anything(), { minLength: 1, maxLength: 5 }).map((data) => JSON.stringify({ data })),
      fc.string({ unit: "binary", maxLength: 100 }),
    );
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...ALL), body, async (collection, raw) => {
        const reply = await postRaw(tenant, collection, raw);
        expectProblem(reply, [400]);
        expect(["invalid_body", "invalid_records"]).toContain(reply.body.code);
      }),
      RUNS,
    );
    for (const collection of ALL) expect(await storedIds(tenant, collection)).toEqual([]);
  });

  it("judges records with random field values: 200 stores them as sent, 400 names only them and stores nothing", async () => {
    const arbitrary = fc.constantFrom(...ALL).chain((collection) => fc.tuple(fc.constant(collection), hostileRecord(collection)));
    await fc.assert(
      fc.asyncProperty(arbitrary, async ([collection, { record, touched }]) => {
        // A tenant of its own: two runs may send one id, which the second would find stored.
        const tenant = await newTenant(server());
        const valid = FACTORIES[collection]!();
        const reply = await request(server(), "POST", `/v1/sync/${collection}`, { key: tenant.keys.sync, body: { data: [valid, record] } });
        expect(reply.status, JSON.stringify(reply.body)).toBeLessThan(500);
        const ids = await storedIds(tenant, collection);
        if (reply.status !== 200) {
          expectProblem(reply, [400]);
          expect(ids).not.toContain(valid.id);
          if (typeof record.id === "string") expect(ids).not.toContain(record.id);
          if (reply.body.code === "invalid_body") {
            // Only the JSON parser's prototype-poisoning guard refuses a well-formed batch whole.
            expect(JSON.stringify(record)).toMatch(/__proto__|constructor/);
            return;
          }
          expect(reply.body.code).toBe("invalid_records");
          expect(reply.body.errors.length).toBeGreaterThan(0);
          for (const error of reply.body.errors) {
            expect(error.index, JSON.stringify(error)).toBe(1);
            // Record fields are flat: an error names a field exactly as it was sent.
            expect([...touched]).toContain(error.field);
          }
          return;
        }
        expect(reply.body).toEqual({ created: 2, updated: 0, unchanged: 0 });
        expect(ids).toEqual(expect.arrayContaining([valid.id, record.id]));
        const listed = (await readAll(server(), tenant.keys.read, `/v1/${collection}`)).items.find(
          (r: { id: string }) => r.id === record.id,
        );
        const timeFields = collection === "training-records" ? ["completedAt", "expiresAt"] : [EVENT_FIELD[collection]];
        for (const [field, value] of Object.entries(record)) {
          if (timeFields.includes(field) && value !== null) continue;
          expect(listed[field], field).toEqual(value);
        }
        for (const field of touched) if (!(field in record)) expect(listed[field], `${field} left out`).toBeNull();
      }),
      { numRuns: 200 },
    );
  });

  it.each<[string, () => string, number[]]>([
    ["deeply nested arrays as the body", () => "[".repeat(100_000) + "]".repeat(100_000), [400]],
    ["deeply nested arrays as data", () => `{"data":${"[".repeat(100_000)}${"]".repeat(100_000)}}`, [400]],
    ["deeply nested objects in a field", () => `{"data":[{"id":"n1","name":${'{"a":'.repeat(50_000)}1${"}".repeat(50_000)}}]}`, [400]],
    ["deeply nested __proto__ keys", () => `{"data":[${'{"__proto__":'.repeat(20_000)}1${"}".repeat(20_000)}]}`, [400]],
    ["a constructor.prototype key", () => '{"data":[{"id":"p1","name":"x","constructor":{"prototype":{"polluted":true}}}]}', [400]],
    ["a huge string field", () => JSON.stringify({ data: [{ id: "h1", name: "x".repeat(900_000) }] }), [400]],
    ["a huge string of escapes", () => `{"data":[{"id":"h2","name":"${"\\u0000".repeat(150_000)}"}]}`, [400]],
    ["a huge id", () => JSON.stringify({ data: [{ id: "i".repeat(500_000), name: "x" }] }), [400]],
    ["a huge number", () => `{"data":[{"id":"n2","name":${"9".repeat(100_000)}}]}`, [400]],
    ["a string over the limit", () => JSON.stringify({ data: [{ id: "h3", name: "x".repeat(2 * 1024 * 1024) }] }), [413]],
    [
      "many records over the limit",
      () => JSON.stringify({ data: Array.from({ length: 1000 }, (_, i) => ({ id: `r${i}`, name: "y".repeat(1100) })) }),
      [413],
    ],
    ["a thousand empty objects", () => JSON.stringify({ data: Array.from({ length: 1000 }, () => ({})) }), [400]],
    ["duplicate data keys", () => '{"data":[{"id":"d1","name":"x"}],"data":[]}', [400]],
  ])("refuses %s without a 5xx and stores nothing", async (_label, body, statuses) => {
    const tenant = await newTenant(server());
    const reply = await postRaw(tenant, "sectors", body());
    expectProblem(reply, statuses);
    expect(await storedIds(tenant, "sectors")).toEqual([]);
  });

  it("keeps the prototype of stored records clean", async () => {
    const tenant = await newTenant(server());
    const reply = await postRaw(tenant, "sectors", '{"data":[{"id":"p2","name":"x","__proto__":{"admin":true}}]}');
    expectProblem(reply, [400]);
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
    expect(await storedIds(tenant, "sectors")).toEqual([]);
  });
});
