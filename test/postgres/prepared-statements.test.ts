/**
 * However many query shapes clients make (every limit of every list here; windows of every
 * width in practice), no connection of a server's pool keeps more than
 * MAX_PREPARED_PER_CONNECTION prepared statements, each of which PostgreSQL holds a plan of in
 * the connection's backend (README, Sizing). Counted by PostgreSQL itself on each connection.
 */
import { sql, type Kysely } from "kysely";
import { expect, it } from "vitest";
import type { Schema } from "../../src/storage/schema.js";
import { MAX_PREPARED_PER_CONNECTION } from "../../src/storage/postgres.js";
import { get, newTenant, useServer } from "../support/harness.js";

const server = useServer();
const LISTS = ["withdrawals", "returns", "exchanges", "training-records", "employees", "cost-centers", "sectors", "products", "devices"];

/** pg_prepared_statements of every connection of the pool, each held until all are. */
async function preparedPerConnection(db: Kysely<Schema>, poolSize: number): Promise<number[]> {
  let arrived = 0;
  let allHeld!: () => void;
  const held = new Promise<void>((resolve) => (allHeld = resolve));
  return Promise.all(
    Array.from({ length: poolSize }, () =>
      db.connection().execute(async (connection) => {
        arrived += 1;
        if (arrived === poolSize) allHeld();
        await held;
        const { rows } = await sql<{ n: number }>`select count(*)::int as n from pg_prepared_statements`.execute(connection);
        return rows[0]!.n;
      }),
    ),
  );
}

it("keeps at most MAX_PREPARED_PER_CONNECTION prepared statements on each connection", async () => {
  const tenant = await newTenant(server());
  // A page's SQL carries its limit, so each limit of each list is a shape of its own; one at
  // a time, the pool hands the same connection back to nearly every request.
  const pages = LISTS.flatMap((list) => Array.from({ length: 100 }, (_, i) => `/v1/${list}?limit=${i + 1}`)).slice(
    0,
    MAX_PREPARED_PER_CONNECTION + 150,
  );
  for (const path of pages) expect((await get(server(), path, tenant.keys.read)).status).toBe(200);
  const { database } = server().config;
  if (database.engine !== "postgres") throw new Error("test/postgres runs on PostgreSQL only");
  const counts = await preparedPerConnection(server().storage.db, database.poolSize);
  // A connection over the bound is closed when it is released, so none is left holding more
  // than that and the statements of its last use; the count's own statement is one more.
  expect(Math.max(...counts)).toBeLessThanOrEqual(MAX_PREPARED_PER_CONNECTION + 5);
  expect(counts.reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
});
