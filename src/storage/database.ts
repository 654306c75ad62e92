/**
 * Opens the database the configuration names. Engine differences live here and in
 * `engine.ts`, stated once, so queries and migrations are written once for both.
 */
import type { Kysely } from "kysely";
import type { DatabaseConfig } from "../platform/config.js";
import type { Engine } from "./engine.js";
import type { Schema } from "./schema.js";
import { openSqliteStorage } from "./sqlite.js";

export interface Storage {
  readonly db: Kysely<Schema>;
  readonly engine: Engine;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  close(): Promise<void>;
}

export async function openStorage(config: DatabaseConfig): Promise<Storage> {
  switch (config.engine) {
    case "sqlite":
      return openSqliteStorage(config.path);
    case "postgres":
      throw new Error("PostgreSQL support is not built yet");
  }
}
