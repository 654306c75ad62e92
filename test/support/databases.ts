/**
 * The database a test runs on. SQLite by default: a file in a temporary directory.
 * With TEST_DATABASE_URL=postgres://..., a new PostgreSQL database made for the caller on
 * that server and dropped afterwards, so test files running in parallel never meet.
 */
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { openStorage } from "../../src/storage/database.js";
import { migrateToLatest } from "../../src/storage/migrate.js";
import { parseDatabaseUrl } from "../../src/platform/config.js";

export const POSTGRES_URL = process.env.TEST_DATABASE_URL?.startsWith("postgres") ? process.env.TEST_DATABASE_URL : undefined;
export const ENGINE = POSTGRES_URL === undefined ? "sqlite" : "postgres";

export interface TestDatabase {
  url: string;
  /** A directory that lives as long as the database, for files the test writes. */
  dir: string;
  drop(): Promise<void>;
}

async function admin<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: POSTGRES_URL });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** A URL naming another database on the same PostgreSQL server. */
export function postgresUrlFor(name: string, base: string = POSTGRES_URL!): string {
  const url = new URL(base);
  url.pathname = `/${name}`;
  return url.toString();
}

/** A new, empty database (with `migrate`, brought up to date). */
export async function createTestDatabase(options: { migrate?: boolean } = {}): Promise<TestDatabase> {
  const dir = mkdtempSync(join(tmpdir(), "cribline-test-"));
  if (POSTGRES_URL === undefined) {
    const url = `sqlite:${join(dir, "test.db")}`;
    if (options.migrate === true) await migrateUrl(url);
    return { url, dir, drop: async () => rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `cribline_test_${process.pid}_${randomBytes(4).toString("hex")}`;
  // A linguistic default collation, as many servers have: text that must compare in code-point
  // order has to say so itself (COLLATE "C"), or the engines' orders would differ.
  await admin((client) =>
    client.query(`create database "${name}" template template0 encoding 'UTF8' locale 'C.UTF-8' locale_provider icu icu_locale 'en'`),
  );
  const url = postgresUrlFor(name);
  if (options.migrate === true) await migrateUrl(url);
  return {
    url,
    dir,
    drop: async () => {
      await admin((client) => client.query(`drop database if exists "${name}" with (force)`));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function migrateUrl(url: string): Promise<void> {
  const storage = await openStorage(parseDatabaseUrl(url));
  try {
    await migrateToLatest(storage);
  } finally {
    await storage.close();
  }
}

/**
 * Whether a cribline process has begun writing to the database: on SQLite, its file exists;
 * on PostgreSQL, a process holds one of cribline's writer locks (sync, demo seed).
 */
export async function writerStarted(database: TestDatabase): Promise<boolean> {
  if (POSTGRES_URL === undefined) return existsSync(database.url.slice("sqlite:".length));
  const client = new pg.Client({ connectionString: database.url });
  await client.connect();
  try {
    const { rows } = await client.query(
      "select 1 from pg_locks where locktype = 'advisory' and database = (select oid from pg_database where datname = current_database())",
    );
    return rows.length > 0;
  } finally {
    await client.end();
  }
}
