/**
 * The central paging property, for every collection: for any records, any filter the list
 * accepts and any sequence of page sizes, following cursors returns every matching record
 * exactly once, in the documented order, with full pages until the last, whose cursor is null.
 *
 * The oracle below is written from the README ("What a client must know": order, filters, cursors, records),
 * not from the server's code: filters are JS predicates and the order is a JS comparator.
 * Values come from small pools, so filters match often and ties (equal createdAt, equal
 * lower-cased names, equal event dates) are common.
 */
import fc from "fast-check";
import { SLACK_MS } from "../src/collections/late-event.js";
import { describe, expect, it } from "vitest";
import { FACTORIES } from "./support/factories.js";
import { get, newTenant, sync, useServer, type TestServer } from "./support/harness.js";

const server = useServer();

const NUM_RUNS = 40;

// ---------------------------------------------------------------------------------------------
// Pools

/** Accents, mixed case, shared prefixes, LIKE wildcards, and characters whose UTF-16 order
 * differs from their code-point order (U+FB01, U+FF5A are above the surrogates; U+1D4D0 is not
 * in the BMP, so its UTF-16 form starts with a surrogate, below them). */
const NAMES = [
  "ana",
  "Ana",
  "Ana Luíza",
  "ana luíza",
  "Ana 𝓐",
  "Ana ﬁ",
  "Ana ｚ",
  "ana 𝓐",
  "Ana z",
  "ÂNGELA",
  "anabela",
  "Anabela",
  "an",
  "Émile",
  "émile",
  "Zoë",
  "zoe",
  "zoe\u0301",
  "Ärger",
  "ärger",
  "a_b",
  "axb",
  "100%",
  "1000",
  "İlker",
  "ilker",
  "𝓐na",
  "ﬁona",
  "ｚeta",
];

const CODES = ["CC-10", "cc-10", "CC-100", "cc-2", "Cc-20", "DD-1", "dd-1", "Ä-1", "ä-2", "a_1", "ax1", "𝓐-1", "ｚ-1"];

const BASE_EVENT = Date.UTC(2026, 2, 1, 10, 0, 0, 0);
const MIDNIGHT = Date.UTC(2026, 2, 1);
/**
 * Event instants, a few of them 1 ms apart, so inclusive bounds matter; some either side of a
 * midnight and days apart, as a window reads late records by the day of their event; and one
 * months before, so that a bounded window in name order may span more than NAME_WEEK_ARMS
 * weeks (which picks its plan on its first page) as well as fewer (which is read by week).
 */
const EVENT_MS = [
  BASE_EVENT,
  BASE_EVENT + 1,
  BASE_EVENT + 999,
  BASE_EVENT + 1000,
  BASE_EVENT + 3_600_000,
  BASE_EVENT - 86_400_000,
  MIDNIGHT - 1,
  MIDNIGHT,
  BASE_EVENT - 10 * 86_400_000,
  BASE_EVENT - 120 * 86_400_000,
];
/** Zone offsets, in minutes, the same instant is written with. */
const OFFSETS = [0, 60, -180, 330];

const BASE_CREATED = Date.UTC(2026, 0, 15, 12, 0, 0, 0);
/**
 * Clock values pinned per sync batch: equal ones are common, and later batches may be
 * pinned earlier (the server then stamps them just after the previous batch). Some are within SLACK_MS of the events, some exactly at it and some just past it,
 * either way, so a time window meets records stored on time, late, and early.
 */
const CLOCKS = [
  BASE_CREATED,
  BASE_CREATED + 1,
  BASE_CREATED - 60_000,
  BASE_EVENT + 5_000,
  BASE_EVENT + 5_000,
  BASE_EVENT + 5_001,
  BASE_EVENT + SLACK_MS,
  BASE_EVENT + SLACK_MS + 1,
  BASE_EVENT + 1000 - SLACK_MS,
  BASE_EVENT - SLACK_MS - 1,
  BASE_EVENT + 2 * 86_400_000,
];

const TRANSACTION_RELATIONS: Record<string, (string | null)[]> = {
  employeeId: ["e1", "e2", "e3"],
  productId: ["p1", "p2"],
  costCenterId: ["c1", "c2"],
  sectorId: ["s1", "s2", "s3"],
};

interface Shape {
  nameField: string;
  codeField?: string;
  eventField?: string;
  /** Relationship filters the list accepts, with the values records draw from. */
  relations: Record<string, (string | null)[]>;
}

const transaction = (eventField: string): Shape => ({ nameField: "employeeName", eventField, relations: TRANSACTION_RELATIONS });

const SHAPES: Record<string, Shape> = {
  withdrawals: transaction("deliveredAt"),
  returns: transaction("deliveredAt"),
  exchanges: transaction("deliveredAt"),
  // productId is optional on training records: null must not match a productId filter.
  "training-records": { ...transaction("completedAt"), relations: { ...TRANSACTION_RELATIONS, productId: ["p1", "p2", null] } },
  employees: { nameField: "name", relations: { sectorId: ["s1", "s2", "s3"], costCenterId: ["c1", "c2"] } },
  "cost-centers": { nameField: "name", codeField: "code", relations: {} },
  sectors: { nameField: "name", relations: {} },
  products: { nameField: "name", relations: {} },
  devices: { nameField: "name", relations: {} },
};

// ---------------------------------------------------------------------------------------------
// Times, written independently of the server's parser

/** An instant at millisecond precision plus an optional half millisecond. */
interface Instant {
  ms: number;
  halfMs: boolean;
  offset: number;
}

function rfc3339({ ms, halfMs, offset }: Instant): string {
  const wall = new Date(ms + offset * 60_000).toISOString().slice(0, 23); // YYYY-MM-DDTHH:MM:SS.sss
  const abs = Math.abs(offset);
  const zone =
    offset === 0 ? "Z" : `${offset < 0 ? "-" : "+"}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
  return `${wall}${halfMs ? "5" : ""}${zone}`;
}

const compareInstants = (a: Instant, b: Instant) => a.ms - b.ms || Number(a.halfMs) - Number(b.halfMs);

const eventArb: fc.Arbitrary<Instant> = fc.record({
  ms: fc.constantFrom(...EVENT_MS),
  halfMs: fc.constant(false),
  offset: fc.constantFrom(...OFFSETS),
});

/** Window bounds: on event dates, 1 ms either side, or half a millisecond after. */
const boundArb: fc.Arbitrary<Instant> = fc.record({
  ms: fc.tuple(fc.constantFrom(...EVENT_MS), fc.constantFrom(0, 0, 0, -1, 1)).map(([ms, d]) => ms + d),
  halfMs: fc.boolean(),
  offset: fc.constantFrom(...OFFSETS),
});

// ---------------------------------------------------------------------------------------------
// Text order, as the README says: lower-cased, compared in code-point order

function compareCodePoints(a: string, b: string): number {
  const x = [...a];
  const y = [...b];
  for (let i = 0; i < Math.min(x.length, y.length); i += 1) {
    const d = x[i]!.codePointAt(0)! - y[i]!.codePointAt(0)!;
    if (d !== 0) return d;
  }
  return x.length - y.length;
}

const compareIds = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0); // ids are ASCII

/** A prefix of a pool value, 1 or more code points long, each letter in a random case. */
function prefixArb(pool: string[]): fc.Arbitrary<string> {
  return fc
    .tuple(
      fc.constantFrom(...pool),
      // Mostly short prefixes, which many values share.
      fc.oneof({ arbitrary: fc.integer({ min: 1, max: 4 }), weight: 3 }, { arbitrary: fc.integer({ min: 1, max: 12 }), weight: 1 }),
      fc.array(fc.constantFrom("lower", "upper", "keep"), { minLength: 12, maxLength: 12 }),
    )
    .map(([value, length, cases]) => {
      const points = [...value].slice(0, length);
      return points.map((c, i) => (cases[i] === "lower" ? c.toLowerCase() : cases[i] === "upper" ? c.toUpperCase() : c)).join("");
    });
}

// ---------------------------------------------------------------------------------------------
// Records, filters and the oracle

interface Generated {
  id: string;
  name: string;
  code: string;
  event: Instant;
  relations: Record<string, string | null>;
}

interface Stored extends Generated {
  createdAt: number;
}

interface Filter {
  name?: string;
  code?: string;
  since?: Instant;
  until?: Instant;
  relations: Record<string, string>;
}

function recordArb(shape: Shape): fc.Arbitrary<Generated> {
  const relations = Object.fromEntries(Object.entries(shape.relations).map(([field, pool]) => [field, fc.constantFrom(...pool)]));
  return fc.record({
    id: fc.string({ unit: fc.constantFrom(..."aAzZ09._:-"), minLength: 1, maxLength: 3 }),
    name: fc.constantFrom(...NAMES),
    code: fc.constantFrom(...CODES),
    event: eventArb,
    relations: fc.record(relations),
  });
}

function filterArb(shape: Shape): fc.Arbitrary<Filter> {
  const name = prefixArb(NAMES);
  const options: fc.WeightedArbitrary<Filter>[] = [
    { arbitrary: fc.constant({ relations: {} }), weight: 1 },
    { arbitrary: name.map((n) => ({ name: n, relations: {} })), weight: 3 },
  ];
  if (shape.codeField !== undefined) {
    const code = prefixArb(CODES);
    options.push({ arbitrary: code.map((c) => ({ code: c, relations: {} })), weight: 3 });
    options.push({ arbitrary: fc.tuple(name, code).map(([n, c]) => ({ name: n, code: c, relations: {} })), weight: 1 });
  }
  if (shape.eventField !== undefined) {
    const window = fc.oneof(
      boundArb.map((since): Pick<Filter, "since" | "until"> => ({ since })),
      boundArb.map((until): Pick<Filter, "since" | "until"> => ({ until })),
      fc.tuple(boundArb, boundArb).map(([a, b]) => (compareInstants(a, b) <= 0 ? { since: a, until: b } : { since: b, until: a })),
      // Equal bounds, written in different zones: a window of one instant.
      fc.tuple(boundArb, fc.constantFrom(...OFFSETS)).map(([a, offset]) => ({ since: a, until: { ...a, offset } })),
    );
    options.push({ arbitrary: window.map((w) => ({ ...w, relations: {} })), weight: 2 });
    options.push({ arbitrary: fc.tuple(name, window).map(([n, w]) => ({ name: n, ...w, relations: {} })), weight: 1 });
  }
  const relationFields = Object.keys(shape.relations);
  if (relationFields.length > 0) {
    const relations = fc
      .subarray(relationFields, { minLength: 1, maxLength: 2 })
      .chain((fields) =>
        fc.record(
          Object.fromEntries(
            fields.map((f) => [f, fc.constantFrom(...shape.relations[f]!.filter((v): v is string => v !== null), "x9")]),
          ) as Record<string, fc.Arbitrary<string>>,
        ),
      );
    options.push({ arbitrary: relations.map((r) => ({ relations: r })), weight: 2 });
    options.push({ arbitrary: fc.tuple(name, relations).map(([n, r]) => ({ name: n, relations: r })), weight: 1 });
  }
  return fc.oneof(...options);
}

function queryOf(filter: Filter): string {
  const params: [string, string][] = [];
  if (filter.name !== undefined) params.push(["name", filter.name]);
  if (filter.code !== undefined) params.push(["code", filter.code]);
  if (filter.since !== undefined) params.push(["createdSince", rfc3339(filter.since)]);
  if (filter.until !== undefined) params.push(["createdUntil", rfc3339(filter.until)]);
  for (const [field, value] of Object.entries(filter.relations)) params.push([field, value]);
  return params.map(([k, v]) => `${k}=${encodeURIComponent(v)}`).join("&");
}

/** Any letter case, the sigma's two lower-case forms (σ, and ς ending a word) as one. */
const caseless = (text: string) => text.toLowerCase().replaceAll("ς", "σ");
const startsWithIgnoringCase = (value: string, prefix: string) => caseless(value).startsWith(caseless(prefix));

/** The records the list must return, in the order it must return them. */
function expected(records: Stored[], filter: Filter): Stored[] {
  const matching = records.filter(
    (r) =>
      (filter.name === undefined || startsWithIgnoringCase(r.name, filter.name)) &&
      (filter.code === undefined || startsWithIgnoringCase(r.code, filter.code)) &&
      // Inclusive window on the event date (stored at whole milliseconds).
      (filter.since === undefined || compareInstants(r.event, filter.since) >= 0) &&
      (filter.until === undefined || compareInstants(r.event, filter.until) <= 0) &&
      Object.entries(filter.relations).every(([field, value]) => r.relations[field] === value),
  );
  const byText = (text: (r: Stored) => string) => (a: Stored, b: Stored) =>
    compareCodePoints(caseless(text(a)), caseless(text(b))) || compareIds(a.id, b.id);
  if (filter.name !== undefined) return matching.sort(byText((r) => r.name));
  if (filter.code !== undefined) return matching.sort(byText((r) => r.code));
  return matching.sort((a, b) => b.createdAt - a.createdAt || compareIds(b.id, a.id));
}

// ---------------------------------------------------------------------------------------------
// Storing and paging

interface Batch {
  size: number;
  clock: number;
}

function toApiRecord(collection: string, shape: Shape, r: Generated): Record<string, unknown> {
  return FACTORIES[collection]!({
    id: r.id,
    [shape.nameField]: r.name,
    ...(shape.codeField === undefined ? {} : { [shape.codeField]: r.code }),
    ...(shape.eventField === undefined ? {} : { [shape.eventField]: rfc3339(r.event) }),
    ...r.relations,
  });
}

/**
 * Syncs the records in batches, each with the clock pinned; returns them with their createdAt,
 * which is the pinned clock unless that is not later than the previous batch's: a list's
 * createdAt never goes backwards (see sync.repository.ts).
 */
async function store(s: TestServer, collection: string, shape: Shape, records: Generated[], batches: Batch[]) {
  const tenant = await newTenant(s);
  const stored: Stored[] = [];
  let latest: number | undefined;
  try {
    for (let at = 0, i = 0; at < records.length; i += 1) {
      const batch = batches[i % batches.length]!;
      const part = records.slice(at, at + batch.size);
      at += part.length;
      s.clock.now = batch.clock;
      await sync(
        s,
        tenant,
        collection,
        part.map((r) => toApiRecord(collection, shape, r)),
      );
      const createdAt = latest === undefined ? batch.clock : Math.max(batch.clock, latest + 1);
      latest = createdAt;
      stored.push(...part.map((r) => ({ ...r, createdAt })));
    }
  } finally {
    s.clock.now = undefined;
  }
  return { tenant, stored };
}

interface Page {
  limit: number;
  items: { id: string; createdAt: string }[];
  cursor: string | null;
}

/** Follows cursors with the given page sizes, in turn, until the cursor is null. */
async function pageThrough(s: TestServer, key: string, path: string, limits: number[], maxPages: number): Promise<Page[]> {
  const pages: Page[] = [];
  let cursor: string | null = null;
  do {
    const limit = limits[pages.length % limits.length]!;
    const url: string = `${path}${path.includes("?") ? "&" : "?"}limit=${limit}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`;
    const reply = await get(s, url, key);
    expect(reply.status, `GET ${url}: ${JSON.stringify(reply.body)}`).toBe(200);
    pages.push({ limit, items: reply.body.data, cursor: reply.body.cursor });
    cursor = reply.body.cursor;
    if (pages.length > maxPages) throw new Error(`paging did not end after ${maxPages} pages: ${url}`);
  } while (cursor !== null);
  return pages;
}

const limitsArb = fc.array(
  fc.oneof({ arbitrary: fc.integer({ min: 1, max: 7 }), weight: 12 }, { arbitrary: fc.constant(100), weight: 1 }),
  { minLength: 1, maxLength: 8 },
);

const batchesArb = fc.array(fc.record({ size: fc.integer({ min: 1, max: 25 }), clock: fc.constantFrom(...CLOCKS) }), {
  minLength: 1,
  maxLength: 6,
});

// ---------------------------------------------------------------------------------------------

describe("oracle self-check", () => {
  it("orders by code point, not by UTF-16 code unit", () => {
    // U+1D4D0 is above U+FF5A as a code point, below it as UTF-16 (a surrogate, 0xD835).
    expect(compareCodePoints("𝓐", "ｚ")).toBeGreaterThan(0);
    expect("𝓐" < "ｚ").toBe(true);
    expect(compareCodePoints("ana", "anabela")).toBeLessThan(0);
    expect(compareCodePoints("émile", "émile")).toBe(0);
  });

  it("writes the same instant in several zones", () => {
    const at = { ms: Date.UTC(2026, 2, 1, 10, 0, 0, 7), halfMs: true, offset: -180 };
    expect(rfc3339(at)).toBe("2026-03-01T07:00:00.0075-03:00");
    expect(rfc3339({ ...at, halfMs: false, offset: 330 })).toBe("2026-03-01T15:30:00.007+05:30");
    expect(Date.parse(rfc3339({ ...at, halfMs: false, offset: 330 }))).toBe(at.ms);
  });
});

describe.each(Object.keys(SHAPES))("paging GET /v1/%s", (collection) => {
  const shape = SHAPES[collection]!;

  it("returns every matching record exactly once, in the documented order, for any filter and page sizes", async () => {
    await fc.assert(
      fc.asyncProperty(
        // size "max": lengths range over 0..60, not fast-check's small default.
        fc.uniqueArray(recordArb(shape), { maxLength: 60, selector: (r) => r.id, size: "max" }),
        batchesArb,
        filterArb(shape),
        limitsArb,
        async (records, batches, filter, limits) => {
          const s = server();
          const { tenant, stored } = await store(s, collection, shape, records, batches);
          const want = expected(stored, filter);
          const query = queryOf(filter);
          const pages = await pageThrough(
            s,
            tenant.keys.read,
            `/v1/${collection}${query === "" ? "" : `?${query}`}`,
            limits,
            records.length + 2,
          );

          const got = pages.flatMap((p) => p.items);
          expect(got.map((r) => r.id)).toEqual(want.map((r) => r.id));
          expect(got.map((r) => r.createdAt)).toEqual(want.map((r) => new Date(r.createdAt).toISOString()));
          const last = pages[pages.length - 1]!;
          expect(last.cursor).toBeNull();
          // The last page is only empty when nothing matches: no extra request to learn the end.
          expect(last.items.length > 0 || want.length === 0).toBe(true);
          for (const page of pages.slice(0, -1)) {
            expect(page.items).toHaveLength(page.limit);
            expect(typeof page.cursor).toBe("string");
          }
        },
      ),
      { numRuns: NUM_RUNS, interruptAfterTimeLimit: 100_000, markInterruptAsFailure: false },
    );
  }, 120_000);
});
