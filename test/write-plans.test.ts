/**
 * The write path's queries keep plans bounded by their keys on a table that was never
 * analysed: a fresh database, or PostgreSQL's autovacuum off or behind, must not turn sync's
 * look-up of a batch's ids into a read of the tenant's whole table (docs/architecture.md,
 * "Plans do not depend on statistics"). Each query is explained over 50,000 stored rows; on
 * PostgreSQL with generic and with custom plans, as sessions may make either.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql, type CompiledQuery } from "kysely";
import pg from "pg";
import { withdrawals } from "../src/collections/registry.js";
import { newRowValues, toStoredContent } from "../src/collections/record.js";
import { parseDatabaseUrl } from "../src/platform/config.js";
import { openStorage, type Storage } from "../src/storage/database.js";
import { deleteByKeysQueries, rowsByKeys, rowsByKeysQueries } from "../src/storage/row-values.js";
import { insertRows, latestCreatedAtQuery, storedBodiesLookup } from "../src/sync/sync.repository.js";
import { createTenant } from "../src/tenants/tenant.service.js";
import { ENGINE, createTestDatabase, type TestDatabase } from "./support/databases.js";
import { withdrawal } from "./support/factories.js";

const STORED = 50_000;
const BATCH = 1000;

let database: TestDatabase;
let storage: Storage;
let tenantId: number;
let storedIds: string[];

beforeAll(async () => {
  database = await createTestDatabase({ migrate: true });
  storage = await openStorage(parseDatabaseUrl(database.url));
  // Nothing may gather statistics behind the test's back.
  if (ENGINE === "postgres") await sql`alter table withdrawals set (autovacuum_enabled = off)`.execute(storage.db);
  tenantId = await createTenant(storage.db, "plans");
  const other = await createTenant(storage.db, "other");
  storedIds = [];
  await storage.db.transaction().execute(async (trx) => {
    for (let at = 0; at < STORED; at += 500) {
      const rows = Array.from({ length: 500 }, (_, i) => {
        const content = toStoredContent(withdrawals, withdrawal());
        storedIds.push(content.id);
        // Another tenant's rows too: a plan bounded by the tenant alone would still read too much.
        return newRowValues(content, i % 5 === 0 ? other : tenantId, 1_700_000_000_000 + at + i);
      });
      await insertRows(trx, withdrawals, rows);
    }
  });
}, 120_000);

afterAll(async () => {
  await storage?.close();
  await database?.drop();
});

/** A batch's ids: half stored, half new. */
function batchIds(): string[] {
  return [...storedIds.filter((_, i) => i % 97 === 0).slice(0, BATCH / 2), ...Array.from({ length: BATCH / 2 }, (_, i) => `new-${i}`)];
}

interface PlanNode {
  "Node Type": string;
  "Relation Name"?: string;
  "Actual Rows": number;
  "Actual Loops": number;
  "Rows Removed by Filter"?: number;
  "Rows Removed by Index Recheck"?: number;
  Plans?: PlanNode[];
}

/** Rows the plan's scans of `table` read, kept or filtered out. */
function rowsRead(node: PlanNode, table: string): number {
  const own =
    node["Relation Name"] === table
      ? node["Actual Rows"] * node["Actual Loops"] + (node["Rows Removed by Filter"] ?? 0) + (node["Rows Removed by Index Recheck"] ?? 0)
      : 0;
  return own + (node.Plans ?? []).reduce((sum, child) => sum + rowsRead(child, table), 0);
}

async function postgresRowsRead(query: CompiledQuery, mode: string): Promise<{ read: number; plan: string }> {
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    await client.query(`set plan_cache_mode = ${mode}`);
    // Explaining with analyze runs the statement: a delete is undone.
    await client.query("begin");
    const { rows } = await client.query({ text: `explain (analyze, format json) ${query.sql}`, values: [...query.parameters] });
    await client.query("rollback");
    const plan = rows[0]["QUERY PLAN"][0].Plan as PlanNode;
    return { read: rowsRead(plan, "withdrawals"), plan: JSON.stringify(plan).slice(0, 2000) };
  } finally {
    await client.end();
  }
}

async function sqlitePlan(query: CompiledQuery): Promise<string[]> {
  const { rows } = await storage.db.executeQuery<{ detail: string }>({ ...query, sql: `explain query plan ${query.sql}` });
  return rows.map((row) => row.detail);
}

describe("the write path's plans on a table never analysed", () => {
  const queries = () => ({
    "sync's look-up of a batch's ids": rowsByKeysQueries(
      storage.db,
      storedBodiesLookup("withdrawals"),
      batchIds().map((id) => [tenantId, id]),
    ),
    "the same ids, locked": rowsByKeysQueries(
      storage.db,
      { ...storedBodiesLookup("withdrawals"), forUpdate: true },
      batchIds().map((id) => [tenantId, id]),
    ),
    "sync's newest createdAt": [latestCreatedAtQuery(storage.db, withdrawals, tenantId)],
    // Retention deletes old webhook messages by key this way.
    "a delete of the same ids": deleteByKeysQueries(
      storage.db,
      "withdrawals",
      ["tenant_id", "id"],
      batchIds().map((id) => [tenantId, id]),
    ),
  });

  it("has statistics on none of it", async () => {
    if (ENGINE === "postgres") {
      const { rows } = await sql<{ reltuples: number }>`select reltuples from pg_class where relname = 'withdrawals'`.execute(storage.db);
      expect(Number(rows[0]?.reltuples)).toBeLessThanOrEqual(0);
    } else {
      const { rows } = await sql<{ name: string }>`select name from sqlite_master where name = 'sqlite_stat1'`.execute(storage.db);
      const stats = rows.length === 0 ? [] : (await sql`select * from sqlite_stat1 where tbl = 'withdrawals'`.execute(storage.db)).rows;
      expect(stats).toEqual([]);
    }
  });

  it.each(["sync's look-up of a batch's ids", "the same ids, locked", "sync's newest createdAt", "a delete of the same ids"] as const)(
    "reads no more than its keys for %s",
    async (name) => {
      const compiled = queries()[name];
      expect(compiled.length).toBeGreaterThan(0);
      for (const query of compiled) {
        if (ENGINE === "postgres") {
          for (const mode of ["force_generic_plan", "force_custom_plan"]) {
            const { read, plan } = await postgresRowsRead(query, mode);
            // A probe per key reads at most the batch (a delete, its rows once more by address);
            // the tenant holds 40,000 rows.
            expect(read, `${mode}: ${plan}`).toBeLessThanOrEqual(2 * BATCH);
          }
        } else {
          const plan = await sqlitePlan(query);
          expect(
            plan.some((line) => /^SEARCH withdrawals USING (INDEX|PRIMARY KEY|COVERING INDEX)/.test(line)),
            plan.join("\n"),
          ).toBe(true);
          expect(
            plan.filter((line) => /^SCAN withdrawals\b/.test(line)),
            plan.join("\n"),
          ).toEqual([]);
        }
      }
    },
  );
});

/**
 * A session plans a statement once and keeps the plan (generic plans, see storage/postgres.ts):
 * a look-up first planned while the table was empty must still probe each key once the table
 * is large. Here on one connection, as an import runs: a first batch into an empty table, then
 * 50,000 rows, then the look-ups again, their reads counted by the blocks they fetched.
 */
describe("the write path's look-ups first planned on an empty table", () => {
  let empty: TestDatabase;
  let fresh: Storage;

  beforeAll(async () => {
    empty = await createTestDatabase({ migrate: true });
    fresh = await openStorage(parseDatabaseUrl(empty.url));
  });

  afterAll(async () => {
    await fresh?.close();
    await empty?.drop();
  });

  it("probes each key after the table has grown", async () => {
    await fresh.db.connection().execute(async (conn) => {
      if (ENGINE === "postgres") await sql`alter table withdrawals set (autovacuum_enabled = off)`.execute(conn);
      const tenant = await createTenant(conn, "growing");
      const ids: string[] = [];
      const rowsOf = (count: number, at: number) =>
        Array.from({ length: count }, (_, i) => {
          const content = toStoredContent(withdrawals, withdrawal());
          ids.push(content.id);
          return newRowValues(content, tenant, at + i);
        });
      const lookUps = async (executor: typeof conn) => {
        const keys = [
          ...ids.filter((_, i) => i % 97 === 0).slice(0, BATCH / 2),
          ...Array.from({ length: BATCH / 2 }, (_, i) => `new-${i}`),
        ];
        const found = await rowsByKeys(
          executor,
          storedBodiesLookup("withdrawals"),
          keys.map((id) => [tenant, id]),
        );
        const latest = (await executor.executeQuery(latestCreatedAtQuery(executor, withdrawals, tenant))).rows[0];
        return { found: found.length, latest };
      };
      // Planned now, on the empty table.
      expect((await lookUps(conn)).found).toBe(0);
      await conn.transaction().execute(async (trx) => {
        for (let at = 0; at < STORED; at += 500) await insertRows(trx, withdrawals, rowsOf(500, 1_700_000_000_000 + at));
      });
      await conn.transaction().execute(async (trx) => {
        // Blocks of the table and its indexes fetched by this session and not yet reported: on
        // PostgreSQL 15 these include earlier transactions' (the inserts) until the session
        // reports them, which it does only between transactions, so the look-ups' own blocks
        // are the difference across them.
        const blocksFetched = async () => {
          const { rows } = await sql<{ blocks: string }>`
            select sum(pg_stat_get_xact_blocks_fetched(c.oid)) as blocks from pg_class c
            where c.oid = 'withdrawals'::regclass or c.oid in (select indexrelid from pg_index where indrelid = 'withdrawals'::regclass)`.execute(
            trx,
          );
          return Number(rows[0]?.blocks ?? 0);
        };
        const before = ENGINE === "postgres" ? await blocksFetched() : 0;
        const { found, latest } = await lookUps(trx);
        expect(found).toBe(BATCH / 2);
        expect(Math.max(Number(latest?.latest ?? 0), Number(latest?.late ?? 0))).toBe(1_700_000_000_000 + STORED - 1);
        if (ENGINE === "postgres") {
          // A probe per key fetches a few blocks; a scan of the tenant's rows per key, hundreds.
          expect((await blocksFetched()) - before).toBeLessThanOrEqual(10 * BATCH);
        } else {
          for (const query of rowsByKeysQueries(trx, storedBodiesLookup("withdrawals"), [[tenant, ids[0]]])) {
            const { rows } = await trx.executeQuery<{ detail: string }>({ ...query, sql: `explain query plan ${query.sql}` });
            expect(rows.map((row) => row.detail).join("\n")).toMatch(/SEARCH withdrawals USING (INDEX|PRIMARY KEY|COVERING INDEX)/);
          }
        }
      });
    });
  }, 120_000);
});
