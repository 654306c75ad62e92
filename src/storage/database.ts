/**
 * Opens the database the configuration names. Engine differences live here and in
 * `engine.ts`, stated once, so queries and migrations are written once for both.
 */
import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import SqliteDatabase from "better-sqlite3";
import { Kysely, SqliteDialect } from "kysely";
import type { DatabaseConfig } from "../platform/config.js";
import type { Engine } from "./engine.js";
import type { Schema } from "./schema.js";

export interface Storage {
  readonly db: Kysely<Schema>;
  readonly engine: Engine;
  close(): Promise<void>;
}

function openSqlite(path: string): Storage {
  if (path !== ":memory:") mkdirSync(dirname(path), { recursive: true });
  const database = new SqliteDatabase(path);
  // WAL lets readers run beside the writer; synchronous=FULL makes a commit durable before
  // sync answers, so an acknowledged batch survives a power loss, not only a crash.
  database.pragma("journal_mode = WAL");
  database.pragma("synchronous = FULL");
  database.pragma("busy_timeout = 5000");
  const db = new Kysely<Schema>({ dialect: new SqliteDialect({ database }) });
  return {
    db,
    engine: "sqlite",
    async close() {
      database.pragma("optimize");
      await db.destroy();
    },
  };
}

export async function openStorage(config: DatabaseConfig): Promise<Storage> {
  switch (config.engine) {
    case "sqlite":
      return openSqlite(config.path);
    case "postgres":
      throw new Error("PostgreSQL support is not built yet");
  }
}
