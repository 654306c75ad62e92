/**
 * Opens the database the configuration names. Engine differences live here and in
 * `engine.ts`, stated once, so queries and migrations are written once for both.
 */
import type { Kysely } from "kysely";
import type { DatabaseConfig } from "../platform/config.js";
import type { Engine } from "./engine.js";
import type { Schema } from "./schema.js";
import { openPostgresStorage } from "./postgres.js";
import { openSqliteStorage } from "./sqlite.js";

export interface Storage {
  readonly db: Kysely<Schema>;
  readonly engine: Engine;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  /** Whether an error means the database is out of reach for now (retry), not a bug. */
  isUnavailable(error: unknown): boolean;
  close(): Promise<void>;
}

export interface OpenOptions {
  /** Told about errors the database reports outside any request (an idle connection lost). */
  onBackgroundError?: (err: Error) => void;
}

export async function openStorage(config: DatabaseConfig, options: OpenOptions = {}): Promise<Storage> {
  switch (config.engine) {
    case "sqlite":
      return openSqliteStorage(config.path);
    case "postgres": {
      const storage = openPostgresStorage({ ...config, onIdleError: options.onBackgroundError });
      try {
        await storage.ping();
      } catch (error) {
        await storage.close();
        throw new StorageError(`cannot use the PostgreSQL database at ${withoutPassword(config.url)}: ${reason(error)}`, { cause: error });
      }
      return storage;
    }
  }
}

export class StorageError extends Error {
  override name = "StorageError";
}

/** A database URL fit for a message or a log line: its password, if any, masked. */
export function withoutPassword(raw: string): string {
  try {
    const url = new URL(raw);
    if (url.password !== "") url.password = "***";
    return url.toString();
  } catch {
    return "(a URL that does not parse)";
  }
}

function reason(error: unknown): string {
  if (error instanceof AggregateError && error.errors.length > 0) return reason(error.errors[0]);
  if (error instanceof Error) return error.message || (error as NodeJS.ErrnoException).code || error.name;
  return String(error);
}
