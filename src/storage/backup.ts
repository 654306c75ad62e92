/**
 * `cribline backup FILE` on the embedded database: a consistent copy taken while the server
 * serves and syncs. `VACUUM INTO` writes the copy inside one read transaction, so it holds
 * exactly what was committed when it began (every batch acknowledged before then), whatever
 * writers do meanwhile, and it never has to start over as SQLite's page-by-page backup does
 * when another process writes. The copy is then opened on its own and checked.
 */
import { closeSync, existsSync, openSync, rmSync, statSync } from "node:fs";
import { dirname, resolve } from "node:path";
import Database from "better-sqlite3";
import { PRIVATE_FILE_MODE } from "./private-files.js";

export class BackupError extends Error {
  override name = "BackupError";
}

export interface BackupSummary {
  path: string;
  bytes: number;
  ms: number;
  /** Rows per table counted. */
  counts: Record<string, number>;
}

/**
 * Makes the empty file the copy goes into, owner-only as the database is (VACUUM INTO takes an
 * empty file and keeps its mode); made in one step, so an existing file is never written over.
 */
function createPrivateFile(target: string): void {
  try {
    closeSync(openSync(target, "wx", PRIVATE_FILE_MODE));
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "EEXIST") throw new BackupError(`${target} exists already: a backup never overwrites a file`, { cause: error });
    if (code === "ENOENT" || code === "ENOTDIR") {
      throw new BackupError(`no folder ${dirname(resolve(target))} to write the backup into: create it first`, { cause: error });
    }
    throw error;
  }
}

/**
 * Copies the SQLite database at `source` to `target` (which must not exist), checks the copy
 * and says what it holds: the rows of each of the `counted` tables that it has.
 */
export function backupSqlite(source: string, target: string, counted: readonly string[]): BackupSummary {
  if (!existsSync(source)) throw new BackupError(`no database at ${source}`);
  const started = performance.now();
  const db = new Database(source, { fileMustExist: true });
  try {
    // Waits for a writer's lock instead of failing; the read it takes lets writers go on.
    db.pragma("busy_timeout = 5000");
    createPrivateFile(target);
    try {
      db.prepare("vacuum into ?").run(target);
    } catch (error) {
      rmSync(target, { force: true });
      throw error;
    }
  } finally {
    db.close();
  }
  const copy = new Database(target, { readonly: true, fileMustExist: true });
  try {
    const problems = (copy.pragma("integrity_check") as { integrity_check: string }[]).map((row) => row.integrity_check);
    if (problems.length !== 1 || problems[0] !== "ok") {
      throw new BackupError(`the copy at ${target} failed its integrity check: ${problems.slice(0, 5).join("; ")}`);
    }
    const tables = new Set(
      (copy.prepare("select name from sqlite_master where type = 'table'").all() as { name: string }[]).map((r) => r.name),
    );
    const counts: Record<string, number> = {};
    for (const table of counted.filter((t) => tables.has(t))) {
      counts[table] = (copy.prepare(`select count(*) as n from "${table}"`).get() as { n: number }).n;
    }
    return { path: target, bytes: statSync(target).size, ms: performance.now() - started, counts };
  } finally {
    copy.close();
  }
}
