/** What every command of the command line shares: its output lines, and the database opened for one command. */
import type { Config } from "../platform/config.js";
import { openStorage, type Storage } from "../storage/database.js";
import { ensureSchema } from "../storage/migrate.js";

export function out(line: string): void {
  process.stdout.write(`${line}\n`);
}

export function err(line: string): void {
  process.stderr.write(`${line}\n`);
}

/** Opens the configured database, readies its schema (see ensureSchema), runs `work`, and closes it. */
export async function withStorage<T>(config: Config, work: (storage: Storage) => Promise<T>): Promise<T> {
  const storage = await openStorage(config.database);
  try {
    await ensureSchema(storage);
    return await work(storage);
  } finally {
    await storage.close();
  }
}
