/**
 * Every filter and order combination of every list rides an index. The SQL each one compiles
 * to and its plan on a realistic data set are kept in docs/sql/, one file per engine, so a
 * query change shows in review as a diff of that file; this test fails when they drift or when
 * a plan scans a table. Each engine's run checks its own plans.
 */
import { describe, expect, it, onTestFinished } from "vitest";
import { sql, type CompiledQuery } from "kysely";
import { COLLECTIONS } from "../src/collections/registry.js";
import type { Collection } from "../src/collections/define.js";
import { newRowValues, toStoredContent } from "../src/collections/record.js";
import { seedDemo } from "../src/demo/demo.service.js";
import { insertRows } from "../src/sync/sync.repository.js";
import { FACTORIES } from "./support/factories.js";
import { parseListQuery } from "../src/lists/list.query.js";
import { bracketQuery, isWindow, pageQuery, spanQuery } from "../src/lists/list.repository.js";
import { weekAt } from "../src/lists/window/buckets.js";
import { needsSpan, planOf, type Span, type WindowPlan } from "../src/lists/window/plan.js";
import { spanOf } from "../src/lists/window/probes.js";
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
/** A window that ends at the demo's present. */
const TO_NOW = "createdSince=2026-08-01T00:00:00Z&createdUntil=2026-11-22T00:00:00Z";

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
  /** A plan line that reads a whole table. */
  tableScan(collection: Collection): RegExp;
  indexUse: RegExp;
  /** A plan line that sorts (or reads in no order: a bitmap scan). */
  sort: RegExp;
  /** An index range that starts at a page's cursor (or, in a window, at its tighter createdAt bound). */
  fromCursor: RegExp;
}

/** EXPLAIN with `options` of the query as cribline's connections run it: a prepared statement's generic plan. */
async function explainPrepared<R>(storage: Storage, compiled: CompiledQuery, options: string): Promise<R[]> {
  return storage.db.connection().execute(async (conn) => {
    await sql.raw(`prepare page_plan as ${compiled.sql}`).execute(conn);
    try {
      const values = compiled.parameters.map((v) =>
        v === null ? "null" : typeof v === "number" ? String(v) : `'${String(v).replaceAll("'", "''")}'`,
      );
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
    // A walk of an index over a tenant's whole range reads everything; so does a bitmap scan,
    // which also loses the index order.
    tableScan: () => /Seq Scan|Index Cond: \(tenant_id = \$?\d+\)( \||$)/,
    indexUse: /Index (Only )?Scan/,
    sort: /->  (Sort|Bitmap Heap Scan)\b/,
    fromCursor: /Index Cond: .*(ROW\((created_at|name_key|code_key), id\) [<>] ROW|created_at <= \$\d+)/,
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
    const explainChecked = async (collection: Collection, compiled: CompiledQuery, title: string, firstOnly = false) => {
      const details = await explainer.explain(storage, compiled);
      expect(details.join(" | "), title).toMatch(explainer.indexUse);
      // Compiling a page's plan to machine code (PostgreSQL's JIT) costs hundreds of milliseconds.
      expect(await explainer.compiles(storage, compiled), `${title} is JIT-compiled`).toBe(false);
      // A probe for the first entry of the tenant's range, in index order, reads one entry
      // (`reader` is the one row of the key's look-up, by its index, that many arms share, and
      // `probes` the one row of a span's probes).
      if (firstOnly) expect(details.join(" | "), title).not.toMatch(/SCAN (?!CONSTANT ROW|(?:reader|probes)\b)\w+|Seq Scan/);
      else expect(details.join(" | "), title).not.toMatch(explainer.tableScan(collection));
      expect(details.filter((line) => explainer.sort.test(line)).length, `${title} sorts:\n${details.join("\n")}`).toBe(0);
      return details;
    };
    /**
     * A list query's plans: its page after a cursor, and its first page; a window's too at a
     * cursor inside it, by the plan its walk's span gives (window/plan.ts), and the statement
     * that finds that span where the page needs one.
     */
    const checkedPlan = async (collection: Collection, text: string, statistics: string) => {
      const query = parseListQuery(collection, text);
      const title = `${collection.name}?${text} ${statistics}`;
      const order = listOrder(query);
      const windowed = isWindow(collection, query);
      let span: Span | undefined;
      let probe: { compiled: CompiledQuery; details: string[] } | undefined;
      if (windowed && needsSpan(query, order, false)) {
        const compiled = spanQuery(storage.db, collection, keyHash);
        probe = { compiled, details: await explainChecked(collection, compiled, `${title}, its span`, true) };
        span = spanOf((await storage.db.executeQuery(compiled)).rows[0]).span;
      }
      const plan = windowed ? planOf(query, order, span) : undefined;
      // The first page: its range starts where the filters' does (for no filter, or a relation, at
      // the tenant's newest row: a walk that the page's limit stops); a bounded window's first
      // page reads its own tiling.
      const firstPlan = windowed ? planOf(query, order, needsSpan(query, order, true) ? span : undefined) : undefined;
      const first = pageQuery(storage.db, collection, keyHash, query, undefined, 21, firstPlan);
      const firstDetails = await explainChecked(collection, first, `${title}, the first page`, !windowed);
      if (windowed) {
        const inside = { key: Date.UTC(2026, 5, 10, 10, 30), id: "x" };
        const compiled = pageQuery(storage.db, collection, keyHash, query, order === "created" ? inside : { key: "m", id: "x" }, 21, plan);
        await explainChecked(collection, compiled, `${title}, cursor inside the window`);
      }
      const after = order === "created" ? { key: Date.UTC(2026, 5, 1), id: "x" } : { key: "m", id: "x" };
      const compiled = pageQuery(storage.db, collection, keyHash, query, after, 21, plan);
      const details = await explainChecked(collection, compiled, title);
      // A page after a cursor reads from the cursor on, not from the start of its filters' range.
      expect(details.join(" | "), `${title}: the index range does not start at the cursor`).toMatch(explainer.fromCursor);
      // A window in name order of a few weeks is read by week, an arm each.
      if (plan?.kind === "weeks")
        expect(
          details.filter((line) => line.includes(`${collection.table}_event_week_name`)).length,
          `${title}: not read by week:\n${details.join("\n")}`,
        ).toBeGreaterThanOrEqual(plan.last - plan.first + 1);
      const firstSection =
        windowed && JSON.stringify(firstPlan) !== JSON.stringify(plan) ? { compiled: first, details: firstDetails } : undefined;
      return { compiled, details, probe, first: firstSection };
    };
    // A window in name order open at its end, a few weeks back, is read by week up to the
    // tenant's last week (here three weeks): the plans, checked, as lines of docs/sql.
    const openWindowByWeek = async (statistics: string) => {
      const collection = COLLECTIONS.find((c) => c.name === "withdrawals")!;
      const text = "name=ma&createdSince=2026-10-20T00:00:00Z";
      const query = parseListQuery(collection, text);
      const plan = planOf(query, "name", { late: null, weeks: [weekAt(Date.UTC(2025, 0, 1)), weekAt(Date.UTC(2026, 10, 5))] });
      expect(plan).toMatchObject({ kind: "weeks" });
      const arms = plan.kind === "weeks" ? plan.last - plan.first + 1 : 0;
      expect(arms, "weeks of an open window").toBe(3);
      const section = ["## withdrawals in name order, open at the end, a few weeks back (the tenant's last row dated 2026-11-05)", ""];
      for (const other of [undefined, { key: "m", id: "x" }]) {
        const title = `withdrawals?${text} ${statistics}, cursor ${other?.key ?? "none"}`;
        const compiled = pageQuery(storage.db, collection, keyHash, query, other, 21, plan);
        const details = await explainChecked(collection, compiled, title);
        const byWeek = details.filter((line) => line.includes(`${collection.table}_event_week_name`));
        expect(byWeek.length, `${title}: not read by week:\n${details.join("\n")}`).toBeGreaterThanOrEqual(arms);
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
        for (const text of combinations(collection)) await checkedPlan(collection, text, "without statistics");
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
        const { compiled, details, probe, first } = await checkedPlan(collection, text, "with statistics");
        lines.push(...planSection(`### ?${text || "(no filter)"}`, { compiled, details }));
        if (first !== undefined) lines.push(...planSection(`### ?${text} (a walk's first page, by the window's own tiling)`, first));
        if (probe !== undefined) lines.push(...planSection(`### ?${text} (the tenant's span, found once a walk)`, probe));
      }
    }
    const withdrawals = COLLECTIONS.find((c) => c.name === "withdrawals")!;
    // Late rows whose event dates span decades (a device's clock reset to 1970): a window over
    // them would take more arms than MAX_LATE_ARMS, and reads them as one arm by createdAt instead.
    {
      const text = "createdSince=1970-01-01T00:00:00Z&createdUntil=2026-11-01T00:00:00Z";
      const query = parseListQuery(withdrawals, text);
      const plan = planOf(query, "created", { late: [Date.UTC(1970, 0, 1), Date.UTC(2026, 10, 1)], weeks: null });
      expect(plan).toEqual({ kind: "late-by-created", above: null });
      lines.push("## withdrawals whose late rows span decades", "");
      for (const other of [undefined, { key: Date.UTC(2026, 5, 10, 10, 30), id: "x" }]) {
        const at = other === undefined ? "none" : new Date(other.key).toISOString();
        const title = `withdrawals?${text}, late rows from 1970 on, cursor ${at}`;
        const compiled = pageQuery(storage.db, withdrawals, keyHash, query, other, 21, plan);
        const details = await explainChecked(withdrawals, compiled, title, other === undefined);
        expect(details.join(" | "), `${title}: not one arm by createdAt`).toMatch(/withdrawals_late_created/);
        expect(details.join(" | "), `${title}: reads a bucket`).not.toMatch(/withdrawals_late_b\d/);
        lines.push(...planSection(`### ?${text} (late rows from 1970 on, cursor ${at})`, { compiled, details }));
      }
    }
    // A wide window's bracket: the statement that finds it, a probe a bucket of the late rows
    // before and after the window, and a later page within it, whose late rows are one arm by createdAt.
    {
      const query = parseListQuery(withdrawals, YEAR);
      const late = [Date.UTC(2025, 0, 1), Date.UTC(2026, 10, 20)] as const;
      const other = { key: Date.UTC(2026, 5, 10, 10, 30), id: "x" };
      lines.push("## withdrawals: a wide window's bracket, and a later page within it", "");
      const compiled = bracketQuery(storage.db, withdrawals, keyHash, query, late, other)!;
      const title = `withdrawals?${YEAR}, its bracket`;
      const details = await explainChecked(withdrawals, compiled, title, true);
      expect(
        details.filter((line) => /withdrawals_late_b\d/.test(line)).length,
        `${title}: a probe a bucket:\n${details.join("\n")}`,
      ).toBeGreaterThan(4);
      lines.push(...planSection(`### ?${YEAR} (its bracket, late rows from 2025-01-01 to 2026-11-20)`, { compiled, details }));
      for (const above of [null, Date.UTC(2025, 10, 15)]) {
        const what = `a later page within its bracket${above === null ? "" : `, above ${new Date(above).toISOString()}`}`;
        const plan: WindowPlan = { kind: "late-by-created", above };
        const page = pageQuery(storage.db, withdrawals, keyHash, query, other, 21, plan);
        const pageDetails = await explainChecked(withdrawals, page, `withdrawals?${YEAR}, ${what}`);
        expect(pageDetails.join(" | "), `${what}: not one arm by createdAt`).toMatch(/withdrawals_late_created/);
        expect(pageDetails.join(" | "), `${what}: reads a bucket`).not.toMatch(/withdrawals_late_b\d/);
        expect(pageDetails.join(" | "), `${what}: the index range does not start at the cursor`).toMatch(explainer.fromCursor);
        lines.push(...planSection(`### ?${YEAR} (${what})`, { compiled: page, details: pageDetails }));
      }
    }
    lines.push(...(await openWindowByWeek("with statistics")));
    await expect(lines.join("\n")).toMatchFileSnapshot(`../docs/sql/list-queries.${ENGINE}.md`);
  }, 180_000);
});
