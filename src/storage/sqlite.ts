/** The embedded engine: better-sqlite3, tuned for one process serving reads and syncs. */
import { closeSync, existsSync, openSync } from "node:fs";
import { dirname } from "node:path";
import SqliteDatabase from "better-sqlite3";
import { Kysely, SqliteDialect, sql, type SqliteDatabase as KyselySqliteDatabase } from "kysely";
import { BoundedMap } from "../platform/bounded-map.js";
import { SQLITE } from "./engine.js";
import { PRIVATE_FILE_MODE, ensurePrivateFolder, tightenToOwner } from "./private-files.js";
import type { Storage } from "./storage.js";
import type { Schema } from "./schema.js";

const STATEMENT_CACHE_SIZE = 500;

/**
 * Kysely asks for a prepared statement on every query, and preparing costs about as much as
 * running a list query; statements are keyed by their SQL, which Kysely builds with
 * placeholders, so a small cache holds every query cribline makes.
 */
function withStatementCache(database: SqliteDatabase.Database): KyselySqliteDatabase {
  const statements = new BoundedMap<string, SqliteDatabase.Statement>(STATEMENT_CACHE_SIZE);
  return {
    close: () => database.close(),
    prepare(sql: string) {
      let statement = statements.get(sql);
      if (statement === undefined) {
        statement = database.prepare(sql);
        statements.set(sql, statement);
      }
      return statement;
    },
  };
}

/**
 * The database holds webhook signing secrets and the cursor secret: it is made owner-only
 * before SQLite opens it, since SQLite gives its -wal and -shm files the database's mode.
 * One made readable by others earlier is narrowed; a file of another owner is left as it is.
 */
function preparePrivateDatabaseFile(path: string): void {
  ensurePrivateFolder(dirname(path));
  // Created here only when missing: opening and closing a file that a connection of this
  // process holds would drop that connection's locks on it (POSIX locks are per process).
  if (!existsSync(path)) {
    try {
      closeSync(openSync(path, "wx", PRIVATE_FILE_MODE));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    }
  }
  for (const file of [path, `${path}-wal`, `${path}-shm`]) tightenToOwner(file);
}

export function openSqliteStorage(path: string): Storage {
  if (path !== ":memory:") preparePrivateDatabaseFile(path);
  const raw = new SqliteDatabase(path);
  // WAL lets readers run beside the writer; synchronous=FULL makes a commit durable before
  // sync answers, so an acknowledged batch survives a power loss, not only a crash.
  raw.pragma("journal_mode = WAL");
  raw.pragma("synchronous = FULL");
  raw.pragma("busy_timeout = 5000");
  // A sync batch writes thousands of pages to the WAL, many of them the same batch after batch
  // (the newest end of each index in createdAt order, the current week's name range). The
  // default checkpoint, every 4 MiB of WAL, put one and its fsync in nearly every batch's commit;
  // every 256 MiB, each such page is written back once for many batches (docs/measurements.md).
  raw.pragma("wal_autocheckpoint = 65536");
  raw.pragma("cache_size = -32768");
  // Statistics for the planner, refreshed at open and then hourly where they are stale
  // (SQLite's advice for long-lived connections).
  raw.pragma("optimize = 0x10002");
  const optimizer = setInterval(() => raw.pragma("optimize"), 60 * 60 * 1000).unref();
  const db = new Kysely<Schema>({ dialect: new SqliteDialect({ database: withStatementCache(raw) }) });
  return {
    db,
    engine: SQLITE,
    async ping() {
      await sql`select 1`.execute(db);
    },
    // Another connection (an import beside serve) held the write lock beyond busy_timeout.
    isUnavailable: (error) => error instanceof SqliteDatabase.SqliteError && error.code.startsWith("SQLITE_BUSY"),
    async close() {
      clearInterval(optimizer);
      raw.pragma("optimize");
      await db.destroy();
    },
  };
}
