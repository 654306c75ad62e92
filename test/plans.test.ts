/**
 * Every filter and order combination of every list rides an index. The SQL each one compiles
 * to and its plan on a realistic data set are kept in docs/sql/, one file per engine, so a
 * query change shows in review as a diff of that file; this test fails when they drift or when
 * a plan scans a table. Each engine's run checks its own plans.
 */
import { describe, expect, it, onTestFinished, vi } from "vitest";
import { sql, type CompiledQuery } from "kysely";
import { COLLECTIONS } from "../src/collections/registry.js";
import type { Collection } from "../src/collections/define.js";
import { newRowValues, toStoredContent } from "../src/collections/record.js";
import { seedDemo } from "../src/demo/demo.service.js";
import { insertRows } from "../src/sync/sync.repository.js";
import { FACTORIES } from "./support/factories.js";
import { parseListQuery } from "../src/lists/list.query.js";
import {
  bracketQuery,
  lateRangeOf,
  eventSpanQuery,
  lateRangeQuery,
  newestQuery,
  newestStored,
  pageQuery,
  topsQuery,
  windowKeysQuery,
  type WindowPlan,
} from "../src/lists/list.repository.js";
import { needsLateRange } from "../src/lists/list.service.js";
import {
  assumedLateRange,
  bracketTiles,
  bracketValues,
  lateTiles,
  weekValues,
  windowValues,
  WINDOW_FIRST_BOUND,
  type Tops,
} from "../src/lists/window.js";
import { listOrder } from "../src/lists/list.shape.js";
import { parseDatabaseUrl } from "../src/platform/config.js";
import { hashKey } from "../src/platform/keys.js";
import { openStorage, type Storage } from "../src/storage/database.js";
import { createTestDatabase, ENGINE } from "./support/databases.js";

const DAY = "createdSince=2026-06-10T00:00:00Z&createdUntil=2026-06-11T00:00:00Z";
/** Windows whose late rows are tiled by buckets of every size (lists/window.ts). */
const HOUR = "createdSince=2026-06-10T10:00:00Z&createdUntil=2026-06-10T11:00:00Z";
const MONTH = "createdSince=2026-05-01T00:00:00Z&createdUntil=2026-05-31T23:59:59.999Z";
const YEAR = "createdSince=2025-11-01T00:00:00Z&createdUntil=2026-10-31T00:00:00Z";
/** The day the first page of a window that reaches the present is explained as of (assumedLateRange). */
const ASSUMED_NOW = Date.UTC(2026, 10, 1);
/** A window that ends then. */
const TO_NOW = "createdSince=2026-08-01T00:00:00Z&createdUntil=2026-11-01T00:00:00Z";

/** The filter combinations a list accepts, as query strings. */
function combinations(collection: Collection): string[] {
  const out = ["", "name=ma"];
  if (collection.codeField !== undefined) out.push("code=cc-10", "code=cc-10&name=ma");
  if (collection.eventField !== undefined)
    out.push(
      DAY,
      HOUR,
      MONTH,
      YEAR,
      TO_NOW,
      "createdSince=2025-12-01T00:00:00Z",
      "createdUntil=2026-01-01T00:00:00Z",
      `name=ma&${DAY}`,
      `name=ma&${MONTH}`,
      `name=ma&${YEAR}`,
      "name=ma&createdSince=2026-10-01T00:00:00Z",
    );
  for (const relation of collection.relations) out.push(`${relation}=x-1`);
  if (collection.relations.length > 1) out.push(`${collection.relations[0]}=x-1&${collection.relations[1]}=x-2`);
  return out;
}

const WORDS = ["Ana", "mariana", "Márcio", "montagem", "Solda", "luva", "Óculos", "capacete", "Zé", "ézio"];

/**
 * The demo's master data is a few hundred rows, which a planner rightly reads whole; rows of
 * tenant 1 (the demo's) are added until each master table is large enough for it to care.
 */
async function addMasterData(storage: Storage, count: number): Promise<void> {
  const base = Date.UTC(2025, 0, 1);
  await storage.db.transaction().execute(async (trx) => {
    for (const collection of COLLECTIONS.filter((c) => c.kind === "master")) {
      const make = FACTORIES[collection.name]!;
      const rows = Array.from({ length: count }, (_, i) => {
        const name = `${WORDS[i % WORDS.length]} ${WORDS[(i * 7) % WORDS.length]} ${i}`;
        const record = make({ id: `bulk-${i}`, name, code: `CC-${i}`, sectorId: `sec-${i % 40}`, costCenterId: `cc-${i % 60}` });
        const fields = Object.fromEntries(Object.entries(record).filter(([field]) => field === "id" || field in collection.fields));
        return newRowValues(toStoredContent(collection, fields), 1, base + i * 60_000);
      });
      await insertRows(trx, collection, rows);
    }
  });
}

/** Keys enough that the page query's key look-up must use the hash index too. */
async function addKeys(storage: Storage, count: number): Promise<void> {
  const keys = Array.from({ length: count }, (_, i) => ({
    key_id: `crib_bulk${i}`,
    tenant_id: 1,
    hash: hashKey(`bulk-${i}`),
    scopes: "read",
    created_at: 0,
    revoked_at: i % 2 === 0 ? null : 1,
  }));
  for (let i = 0; i < keys.length; i += 500)
    await storage.db
      .insertInto("api_keys")
      .values(keys.slice(i, i + 500))
      .execute();
}

interface Explainer {
  title: string;
  /** The plan of a compiled page query, one line per node. */
  explain(storage: Storage, compiled: CompiledQuery): Promise<string[]>;
  /** Whether running the query compiles it to machine code first. */
  compiles(storage: Storage, compiled: CompiledQuery): Promise<boolean>;
  /** The lines of the plan, as run, that were never run (undefined: the engine does not say). */
  unrun?(storage: Storage, compiled: CompiledQuery): Promise<string[]>;
  /** A plan line that reads a whole table. */
  tableScan(collection: Collection): RegExp;
  indexUse: RegExp;
  /** A plan line that sorts (or reads in no order: a bitmap scan). */
  sort: RegExp;
  /** An index range that starts at a page's cursor (or, in a window, at its tighter createdAt bound). */
  fromCursor: RegExp;
  /**
   * What a window-first page's plan must show to read from `table` only the rows of the page's
   * name range: each arm checks the name on its index entries (SQLite); or the arms read their
   * entries alone, the name is checked before the sort, and the page's rows are read by key
   * (PostgreSQL, whose counts read the same entries whatever their names).
   */
  readsNameRangeOnly(table: string): RegExp[];
}

/** EXPLAIN with `options` of the query as cribline's connections run it: a prepared statement's generic plan. */
async function explainPrepared<R>(storage: Storage, compiled: CompiledQuery, options: string): Promise<R[]> {
  return storage.db.connection().execute(async (conn) => {
    await sql.raw(`prepare page_plan as ${compiled.sql}`).execute(conn);
    try {
      const values = compiled.parameters.map((v) => (typeof v === "number" ? String(v) : `'${String(v).replaceAll("'", "''")}'`));
      return (await sql.raw<R>(`explain (${options}) execute page_plan(${values.join(", ")})`).execute(conn)).rows;
    } finally {
      await sql.raw("deallocate page_plan").execute(conn);
    }
  });
}

/** A statement and its plan as a section of docs/sql: its heading, its SQL, its plan's lines. */
function planSection(heading: string, { compiled, details }: { compiled: CompiledQuery; details: string[] }): string[] {
  return [heading, "", "```sql", compiled.sql, "```", "", ...details.map((d) => `    ${d}`), ""];
}

const EXPLAINERS: Record<typeof ENGINE, Explainer> = {
  sqlite: {
    title: "SQLite",
    async explain(storage, compiled) {
      const rows = await storage.db.executeQuery<{ detail: string }>({ ...compiled, sql: `explain query plan ${compiled.sql}` });
      return rows.rows.map((r) => r.detail);
    },
    compiles: async () => false,
    // A table must never be scanned (a scan of a subquery would read an arm's own page), nor
    // a tenant's whole index walked (a search constrained by the tenant alone).
    tableScan: (collection) => new RegExp(`SCAN ${collection.table}\\b|\\(tenant_id=\\?\\)( \\||$)`),
    indexUse: /USING (COVERING )?INDEX|USING PRIMARY KEY/,
    sort: /^USE TEMP B-TREE/,
    fromCursor: /\((created_at|name_key|code_key),id\)[<>]\(\?,\?\)|created_at<\?\)/,
    readsNameRangeOnly: (table) => [`${table}_on_time`, `${table}_late_b1`].map((index) => new RegExp(`USING COVERING INDEX ${index} `)),
  },
  postgres: {
    title: "PostgreSQL",
    // The generic plan, which cribline's connections always use (plan_cache_mode): EXPLAIN of
    // the query itself would plan it for the values given.
    async explain(storage, compiled) {
      const plan = await explainPrepared<{ "QUERY PLAN": string }>(storage, compiled, "costs off");
      return plan.map((r) => r["QUERY PLAN"]);
    },
    // Plain EXPLAIN does not say whether the plan would be compiled: run it.
    async compiles(storage, compiled) {
      const [row] = await explainPrepared<{ "QUERY PLAN": [{ JIT?: unknown }] }>(storage, compiled, "analyze, format json");
      return row?.["QUERY PLAN"][0].JIT !== undefined;
    },
    async unrun(storage, compiled) {
      const plan = await explainPrepared<{ "QUERY PLAN": string }>(storage, compiled, "analyze, costs off, timing off");
      return plan.map((r) => r["QUERY PLAN"]).filter((line) => line.includes("(never executed)"));
    },
    // A walk of an index over a tenant's whole range reads everything; so does a bitmap scan,
    // which also loses the index order.
    tableScan: () => /Seq Scan|Index Cond: \(tenant_id = \$?\d+\)( \||$)/,
    indexUse: /Index (Only )?Scan/,
    sort: /->  (Sort|Bitmap Heap Scan)\b/,
    fromCursor: /Index Cond: .*(ROW\((created_at|name_key|code_key), id\) [<>] ROW|created_at <= \$\d+)/,
    readsNameRangeOnly: (table) => [
      new RegExp(`Index Only Scan Backward using ${table}_on_time on `),
      new RegExp(`Index Only Scan using ${table}_late_b1 on `),
      /CTE Scan on w *\| *Filter: \(\(name_key >= /,
      new RegExp(`Index Scan using ${table}_pkey on ${table} t *\\| *Index Cond: \\(\\(tenant_id = \\$\\d+\\) AND \\(id = w\\.id\\)\\)`),
    ],
  },
};

describe(`list query plans on ${EXPLAINERS[ENGINE].title}`, () => {
  it(`use an index for every filter and order, and match docs/sql/list-queries.${ENGINE}.md`, async () => {
    const explainer = EXPLAINERS[ENGINE];
    const database = await createTestDatabase({ migrate: true });
    // Dropped however the test ends (the last registered runs first), so a failure leaves no database behind.
    onTestFinished(() => database.drop());
    const storage = await openStorage(parseDatabaseUrl(database.url));
    onTestFinished(() => storage.close());
    // Large enough that a planner with statistics would pick a scan if no index fitted.
    const scale = ENGINE === "sqlite" ? 0.2 : 1;
    const { key } = await seedDemo(storage.db, { slug: "plans", scale, now: Date.UTC(2026, 10, 22) });
    const keyHash = hashKey(key);
    await addMasterData(storage, 20_000);
    await addKeys(storage, 5_000);
    /**
     * The plan of one list query, checked: an index, no scan, no sort. Its
     * page follows a cursor; a window's first page (no cursor) and a cursor inside a window
     * bound its arms differently, so windows are checked at those positions too.
     */
    const explainChecked = async (collection: Collection, compiled: CompiledQuery, title: string, firstOnly = false, sorts = 0) => {
      const details = await explainer.explain(storage, compiled);
      expect(details.join(" | "), title).toMatch(explainer.indexUse);
      // Compiling a page's plan to machine code (PostgreSQL's JIT) costs hundreds of milliseconds.
      expect(await explainer.compiles(storage, compiled), `${title} is JIT-compiled`).toBe(false);
      // A probe for the first entry of the tenant's range, in index order, reads one entry
      // (`reader` is the one row of the key's look-up, by its index, that many arms share;
      // `recent`, the bounded rows in createdAt order that a page keeps its window's from, `page`
      // what it keeps, and each `arm` of its count, all subqueries read once).
      if (firstOnly) expect(details.join(" | "), title).not.toMatch(/SCAN (?!CONSTANT ROW|(?:reader|recent|page|arm)\b)\w+|Seq Scan/);
      else if (sorts !== Infinity) expect(details.join(" | "), title).not.toMatch(explainer.tableScan(collection));
      expect(details.filter((line) => explainer.sort.test(line)).length, `${title} sorts:\n${details.join("\n")}`).toBeLessThanOrEqual(
        sorts,
      );
      return details;
    };
    /**
     * A window in name order has two plans for a walk's later pages: the name index, and the
     * window's keys (lists/window-keys.ts), whose pages sort by name the rows they read by id and
     * those stored since (the one later page allowed to sort). The walk's first page picks in its
     * own statement, checked with the keys: it may read the window's own rows and sort them, at
     * most WINDOW_FIRST_BOUND of them, which it counts first; the keys' statement sorts them too,
     * at most WINDOW_KEYS_BOUND.
     */
    let unrunChecked = 0;
    const checkedPlan = async (collection: Collection, text: string, statistics: string, byKeys = false) => {
      const query = parseListQuery(collection, text);
      const title = `${collection.name}?${text} ${statistics}${byKeys ? ", by the window's keys" : ""}`;
      // PostgreSQL reads a table smaller than the bound as it likes: that reads at most about the bound.
      const { rows: tableRows } = await storage.db.executeQuery<{ n: number }>(
        sql`select count(*) as n from ${sql.table(collection.table)}`.compile(storage.db),
      );
      const anyPlan = byKeys && ENGINE === "postgres" && Number(tableRows[0]?.n) <= WINDOW_FIRST_BOUND;
      // A page by the window's keys sorts what it read; PostgreSQL reads the ids by a bitmap too.
      const sorts = anyPlan ? Infinity : byKeys ? (ENGINE === "postgres" ? 2 : 1) : 0;
      // A window that must first find where the tenant's late rows lie: that probe is checked too.
      let probed: WindowPlan = {};
      if (needsLateRange(storage.db, collection, query)) {
        const probe = lateRangeQuery(storage.db, collection, keyHash);
        await explainChecked(collection, probe, `${title}, the late rows' range`, true);
        probed = lateRangeOf((await storage.db.executeQuery(probe)).rows[0]);
      }
      let plan: WindowPlan = windowInNameOrder(collection, text) ? { ...probed, byName: "name-index" } : probed;
      // A window that reaches the present, or one whose tenant's late rows were found before: its
      // first page assumes where the late rows lie and checks it in its own statement
      // (assumedLateRange), as of a fixed day, so that this file does not change with it.
      const assumedRange = listOrder(query) === "created" ? assumedLateRange(query, ASSUMED_NOW, probed.late ?? undefined) : undefined;
      let assumed: { compiled: CompiledQuery; details: string[] } | undefined;
      if (assumedRange !== undefined) {
        const compiled = pageQuery(storage.db, collection, keyHash, query, undefined, 21, { late: assumedRange, assumed: true });
        assumed = {
          compiled,
          details: await explainChecked(collection, compiled, `${title}, the first page, late rows assumed`, false, sorts),
        };
      }
      // A walk's first page probes the name index, counts the window's rows and runs the plan picked, in one
      // statement (choosingPage): its page sorts as the window's own rows do, once more at the
      // end; the count stops at the bound, and PostgreSQL may read an arm that it estimates
      // smaller than the bound whole, by a bitmap scan, and sort it.
      let choosing: { compiled: CompiledQuery; details: string[] } | undefined;
      let keys: { compiled: CompiledQuery; details: string[] } | undefined;
      let probedFirst: { compiled: CompiledQuery; details: string[] } | undefined;
      // A window open at its end (so that it reaches the present) reads its pages as the plain
      // list's, from a bounded number of rows: the on-time and late rows by createdAt, no bucket.
      let recent: { compiled: CompiledQuery; details: string[] } | undefined;
      if (listOrder(query) === "created" && query.since !== undefined && query.until === undefined) {
        const compiled = pageQuery(storage.db, collection, keyHash, query, undefined, 21, { recent: true });
        const details = await explainChecked(collection, compiled, `${title}, read as the plain list's`, true, 0);
        expect(details.join(" | "), `${title}, read as the plain list's: reads a bucket`).not.toMatch(/_late_b\d/);
        for (const index of [`${collection.table}_on_time`, `${collection.table}_late_created`])
          expect(details.join(" | "), `${title}, read as the plain list's: not by ${index}`).toContain(index);
        recent = { compiled, details };
      }
      if (byKeys) {
        // A first page that its tenant's span shows a large share is read by the name index, if its probe agrees.
        const probedCompiled = pageQuery(storage.db, collection, keyHash, query, undefined, 21, { ...probed, probeFirst: true });
        const probedDetails = await explainChecked(collection, probedCompiled, `${title}, the first page by the name index`, false, 0);
        expect(probedDetails.join(" | "), `${title}, the first page by the name index: not by it`).toContain(
          `${collection.table}_name_key_id_event_at`,
        );
        expect(probedDetails.join(" | "), `${title}, the first page by the name index: reads the window's rows`).not.toMatch(
          /_on_time|_late_b/,
        );
        probedFirst = { compiled: probedCompiled, details: probedDetails };
        const compiled = pageQuery(storage.db, collection, keyHash, query, undefined, 21, probed);
        const countSorts = ENGINE === "postgres" ? Number.MAX_SAFE_INTEGER : 3;
        const details = await explainChecked(collection, compiled, `${title}, the first page`, false, anyPlan ? Infinity : countSorts);
        choosing = { compiled, details };
        // Its window-first plan reads only the rows of the page's name range from the table.
        for (const reads of explainer.readsNameRangeOnly(collection.table))
          expect(details.join(" | "), `${title}: reads rows outside the name range`).toMatch(reads);
        const newestCompiled = newestQuery(storage.db, collection, keyHash);
        await explainChecked(collection, newestCompiled, `${title}, the newest rows`, true);
        const newest = newestStored((await storage.db.executeQuery(newestCompiled)).rows[0]) ?? 0;
        const keysCompiled = windowKeysQuery(storage.db, collection, keyHash, query, newest);
        const keySorts = anyPlan || ENGINE === "postgres" ? Infinity : 1;
        keys = { compiled: keysCompiled, details: await explainChecked(collection, keysCompiled, `${title}, the keys`, false, keySorts) };
        const [read] = (await storage.db.executeQuery(keysCompiled)).rows;
        const pairs = typeof read?.keys === "string" ? (JSON.parse(read.keys) as [string, string][]) : (read?.keys ?? []);
        plan = { ...probed, byName: { ids: pairs.slice(0, 21).map(([, id]) => id), newest } };
        // The plan the count did not pick is never run: the name index, or the window's own rows.
        const unrun = await explainer.unrun?.(storage, compiled);
        const rows = unrun === undefined ? [] : (await storage.db.executeQuery(compiled)).rows;
        // An empty page carries no count (and its collection's demo rows may hold no such name).
        if (unrun !== undefined && rows.length > 0) {
          const picked = Number(rows[0]?.window_first) === 1 ? "window-first" : "name-index";
          const notPicked = picked === "window-first" ? `${collection.table}_name_key_id_event_at` : "CTE Scan on w";
          expect(unrun.join(" | "), `${title}: picked ${picked}, never ran the other`).toContain(notPicked);
          unrunChecked += 1;
        }
      }
      // The first page too: its range starts where the filters' does (for no filter, or a
      // relation, at the tenant's newest row: a walk that the page's limit stops).
      const windowed = query.since !== undefined || query.until !== undefined;
      const positions = windowed ? [undefined, { key: Date.UTC(2026, 5, 10, 10, 30), id: "x" }] : [undefined];
      for (const other of positions) {
        const at = other === undefined ? "none" : new Date(other.key).toISOString();
        const compiled = pageQuery(storage.db, collection, keyHash, query, other, 21, plan);
        await explainChecked(collection, compiled, `${title}, cursor ${at}`, other === undefined && !windowed, sorts);
      }
      const after = listOrder(query) === "created" ? { key: Date.UTC(2026, 5, 1), id: "x" } : { key: "m", id: "x" };
      const compiled = pageQuery(storage.db, collection, keyHash, query, after, 21, plan);
      const details = await explainChecked(collection, compiled, title, false, sorts);
      // A page after a cursor reads from the cursor on, not from the start of its filters' range
      // (the window's own rows are read whole, and sorted).
      // (the window's keys are read by id, and the rows stored since by createdAt).
      if (!byKeys) expect(details.join(" | "), `${title}: the index range does not start at the cursor`).toMatch(explainer.fromCursor);
      // A window in name order of a few weeks is read by week, an arm each (weekValues).
      const weeks = listOrder(query) === "name" && windowed ? weekValues(query, Date.now()) : undefined;
      if (weeks !== undefined)
        expect(
          details.filter((line) => line.includes(`${collection.table}_event_week_name`)).length,
          `${title}: not read by week:\n${details.join("\n")}`,
        ).toBe(Object.keys(weeks).filter((name) => /^w\d+$/.test(name)).length);
      return { compiled, details, choosing, keys, assumed, probedFirst, recent };
    };
    // A window in name order that its weeks serve (weekValues) has one plan for every page.
    const windowInNameOrder = (collection: Collection, text: string) => {
      const query = parseListQuery(collection, text);
      return (
        listOrder(query) !== "created" &&
        (query.since !== undefined || query.until !== undefined) &&
        weekValues(query, Date.now()) === undefined
      );
    };
    // A window in name order open at its end, a few weeks back, is read by week up to the week of
    // a day from now (as of a fixed day, so that docs/sql does not change with it), and its
    // statement probes for a row of a later week: the plans, checked, as lines of docs/sql.
    const openWindowByWeek = async (statistics: string) => {
      const collection = COLLECTIONS.find((c) => c.name === "withdrawals")!;
      const text = "name=ma&createdSince=2026-10-20T00:00:00Z";
      const query = parseListQuery(collection, text);
      const arms = Object.keys(weekValues(query, ASSUMED_NOW) ?? {}).filter((name) => /^w\d+$/.test(name)).length;
      expect(arms, "weeks of an open window").toBe(3);
      const section = ["## withdrawals in name order, open at the end, a few weeks back (read by week, as of 2026-11-01)", ""];
      for (const other of [undefined, { key: "m", id: "x" }]) {
        const title = `withdrawals?${text} ${statistics}, as of 2026-11-01, cursor ${other?.key ?? "none"}`;
        vi.useFakeTimers({ toFake: ["Date"], now: ASSUMED_NOW });
        let compiled: CompiledQuery;
        try {
          compiled = pageQuery(storage.db, collection, keyHash, query, other, 21, {});
        } finally {
          vi.useRealTimers();
        }
        const details = await explainChecked(collection, compiled, title, false, 0);
        const byWeek = details.filter((line) => line.includes(`${collection.table}_event_week_name`));
        expect(byWeek.length, `${title}: not read by week, or no probe past the weeks:\n${details.join("\n")}`).toBe(arms + 1);
        if (other !== undefined)
          expect(details.join(" | "), `${title}: the index range does not start at the cursor`).toMatch(explainer.fromCursor);
        section.push(...planSection(`### ?${text} (cursor ${other?.key ?? "none"})`, { compiled, details }));
      }
      return section;
    };
    // A new database has no statistics (SQLite until `PRAGMA optimize` finds them worth
    // gathering; PostgreSQL until autovacuum, which may be off or behind, or an ANALYZE): its
    // plans must be right without them too.
    {
      for (const collection of COLLECTIONS) {
        for (const text of combinations(collection)) {
          await checkedPlan(collection, text, "without statistics");
          if (windowInNameOrder(collection, text)) await checkedPlan(collection, text, "without statistics", true);
        }
      }
      await openWindowByWeek("without statistics");
    }
    await sql`analyze`.execute(storage.db);
    const lines = [
      `# List queries and their ${explainer.title} plans`,
      "",
      `Generated by test/plans.test.ts on the demo data set (scale ${scale}); \`vitest -u\` rewrites it.`,
      "",
    ];
    for (const collection of COLLECTIONS) {
      lines.push(`## ${collection.name}`, "");
      for (const text of combinations(collection)) {
        for (const byKeys of windowInNameOrder(collection, text) ? [false, true] : [false]) {
          const { compiled, details, choosing, keys, assumed, probedFirst, recent } = await checkedPlan(
            collection,
            text,
            "with statistics",
            byKeys,
          );
          const heading = `### ?${text || "(no filter)"}${byKeys ? " (a later page read by the window's keys)" : ""}`;
          lines.push(...planSection(heading, { compiled, details }));
          if (choosing !== undefined) {
            const what =
              "a walk's first page, which counts the window's rows up to a page; then, unless the tenant has rows far before or after a bounded window, reads the name index's first entries; then counts the window's rows up to the bound; and runs the plan picked";
            lines.push(...planSection(`### ?${text} (${what})`, choosing));
          }
          if (probedFirst !== undefined) {
            const what =
              "a walk's first page whose window the tenant's span shows likely a large share: by the name index, limited to none unless its first entries show the window a share";
            lines.push(...planSection(`### ?${text} (${what})`, probedFirst));
          }
          if (keys !== undefined) lines.push(...planSection(`### ?${text} (the window's keys, read once for a walk's later pages)`, keys));
          if (assumed !== undefined) {
            const what = "a walk's first page, which assumes where the late rows lie and checks it in its own statement";
            lines.push(...planSection(`### ?${text} (${what})`, assumed));
          }
          if (recent !== undefined) {
            const what =
              "a page of a window that reaches the present, read as the plain list's from two pages' worth of rows, those in the window kept";
            lines.push(...planSection(`### ?${text} (${what})`, recent));
          }
        }
      }
    }
    // Late rows whose event dates span decades (a device's clock reset to 1970): a window over
    // them would take more arms than MAX_LATE_ARMS, and reads them as one arm by createdAt instead.
    {
      const collection = COLLECTIONS.find((c) => c.name === "withdrawals")!;
      const text = "createdSince=1970-01-01T00:00:00Z&createdUntil=2026-11-01T00:00:00Z";
      const late = { low: Date.UTC(1970, 0, 1), high: Date.UTC(2026, 10, 1) };
      lines.push("## withdrawals whose late rows span decades", "");
      for (const other of [undefined, { key: Date.UTC(2026, 5, 10, 10, 30), id: "x" }]) {
        const at = other === undefined ? "none" : new Date(other.key).toISOString();
        const title = `withdrawals?${text}, late rows from 1970 on, cursor ${at}`;
        const compiled = pageQuery(storage.db, collection, keyHash, parseListQuery(collection, text), other, 21, { late });
        // Its first page reads the late rows from the newest on, as the plain list's does.
        const details = await explainChecked(collection, compiled, title, other === undefined, 0);
        expect(details.join(" | "), `${title}: not one arm by createdAt`).toMatch(/withdrawals_late_created/);
        expect(details.join(" | "), `${title}: reads a bucket`).not.toMatch(/withdrawals_late_b\d/);
        lines.push(...planSection(`### ?${text} (late rows from 1970 on, cursor ${at})`, { compiled, details }));
      }
    }
    // A wide window's bracket (Bracket): the statement that finds it, a probe a bucket of the late
    // rows before and after the window, and a later page within it, whose late rows are one arm by createdAt.
    {
      const collection = COLLECTIONS.find((c) => c.name === "withdrawals")!;
      const query = parseListQuery(collection, YEAR);
      const late = { low: Date.UTC(2025, 0, 1), high: Date.UTC(2026, 10, 20) };
      lines.push("## withdrawals: a wide window's bracket, and a later page within it", "");
      const compiled = bracketQuery(storage.db, collection, keyHash, query, late)!;
      const title = `withdrawals?${YEAR}, its bracket`;
      const details = await explainChecked(collection, compiled, title, true, 0);
      const arms = bracketTiles(bracketValues(query, late) ?? {}).length;
      expect(details.filter((line) => /withdrawals_late_b\d/.test(line)).length, `${title}: a probe a bucket:\n${details.join("\n")}`).toBe(
        arms,
      );
      lines.push(...planSection(`### ?${YEAR} (its bracket, late rows from 2025-01-01 to 2026-11-20)`, { compiled, details }));
      for (const above of [null, Date.UTC(2025, 10, 15)]) {
        const other = { key: Date.UTC(2026, 5, 10, 10, 30), id: "x" };
        const what = `a later page within its bracket${above === null ? "" : `, above ${new Date(above).toISOString()}`}`;
        const page = pageQuery(storage.db, collection, keyHash, query, other, 21, {
          late,
          bracket: { above, below: null },
          byCreated: true,
        });
        const pageDetails = await explainChecked(collection, page, `withdrawals?${YEAR}, ${what}`, false, 0);
        expect(pageDetails.join(" | "), `${what}: not one arm by createdAt`).toMatch(/withdrawals_late_created/);
        expect(pageDetails.join(" | "), `${what}: reads a bucket`).not.toMatch(/withdrawals_late_b\d/);
        expect(pageDetails.join(" | "), `${what}: the index range does not start at the cursor`).toMatch(explainer.fromCursor);
        lines.push(...planSection(`### ?${YEAR} (${what})`, { compiled: page, details: pageDetails }));
      }
    }
    // A wide window's tops (Tops): the statement that finds them, two probes a bucket and two of
    // arm A's range, and a first page by them, which reads only the arms they keep.
    {
      const collection = COLLECTIONS.find((c) => c.name === "withdrawals")!;
      const query = parseListQuery(collection, YEAR);
      const late = { low: Date.UTC(2025, 0, 1), high: Date.UTC(2026, 10, 20) };
      lines.push("## withdrawals: a wide window's tops, and a first page by them", "");
      const compiled = topsQuery(storage.db, collection, keyHash, query, late)!;
      const title = `withdrawals?${YEAR}, its tops`;
      const details = await explainChecked(collection, compiled, title, true, 0);
      const tiled = lateTiles(windowValues(query, true, late));
      const probes = details.filter((line) => /withdrawals_late_b\d/.test(line)).length;
      expect(probes, `${title}: two probes a bucket:\n${details.join("\n")}`).toBeGreaterThanOrEqual(2 * tiled.length);
      lines.push(...planSection(`### ?${YEAR} (its tops, late rows from 2025-01-01 to 2026-11-20)`, { compiled, details }));
      // Tops that keep arm A and the last two tiles.
      const asOf = Date.UTC(2026, 10, 21);
      const kept = (i: number) => i >= tiled.length - 2;
      const tops: Tops = {
        asOf,
        onTime: { newest: asOf - 1, ranked: null },
        tiles: Object.fromEntries(
          tiled.map(({ name }, i) => [name, { newest: kept(i) ? asOf - 2 : asOf - 86_400_000, ranked: kept(i) ? asOf - 3 : null }]),
        ),
      };
      const page = pageQuery(storage.db, collection, keyHash, query, undefined, 21, { late, tops });
      const what = "a first page by its tops, which keep two buckets";
      const pageDetails = await explainChecked(collection, page, `withdrawals?${YEAR}, ${what}`, false, 0);
      const buckets = pageDetails.filter((line) => /withdrawals_late_b\d/.test(line)).length;
      expect(buckets, `${what}: the buckets kept:\n${pageDetails.join("\n")}`).toBe(2);
      expect(pageDetails.join(" | "), `${what}: no guard by createdAt`).toMatch(/withdrawals_late_created/);
      lines.push(...planSection(`### ?${YEAR} (${what})`, { compiled: page, details: pageDetails }));
    }
    // The first and last event week of a tenant's rows, found in the background as a hint for
    // windows in name order (WindowPlan.probeFirst): a probe of one entry of the weeks' index each.
    {
      const collection = COLLECTIONS.find((c) => c.name === "withdrawals")!;
      const compiled = eventSpanQuery(storage.db, collection, keyHash);
      const title = "withdrawals, the event weeks the tenant's rows span";
      const details = await explainChecked(collection, compiled, title, true, 0);
      expect(details.filter((line) => line.includes("withdrawals_event_week_name")).length, `${title}:\n${details.join("\n")}`).toBe(2);
      lines.push("## withdrawals: the event weeks a tenant's rows span (found in the background, a hint for windows in name order)", "");
      lines.push(...planSection("### the first and the last week", { compiled, details }));
    }
    lines.push(...(await openWindowByWeek("with statistics")));
    // Where the engine tells which nodes never ran, a first page in name order was checked on each collection with such rows.
    if (explainer.unrun !== undefined) expect(unrunChecked).toBeGreaterThan(0);
    await expect(lines.join("\n")).toMatchFileSnapshot(`../docs/sql/list-queries.${ENGINE}.md`);
  }, 180_000);
});
