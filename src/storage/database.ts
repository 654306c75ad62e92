/**
 * Opens the database the configuration names. What differs between the engines is stated
 * once, in `engine.ts`, so queries and migrations are written once for both.
 */
import type { DatabaseConfig } from "../platform/config.js";
import { openPostgresStorage } from "./postgres.js";
import { openSqliteStorage } from "./sqlite.js";
import type { Storage } from "./storage.js";

export type { Storage } from "./storage.js";

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
