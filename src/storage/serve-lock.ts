/**
 * One `cribline serve` per embedded database: one process serves SQLite (its rate limits, its
 * webhook loop and its checkpoints assume so). The lock is SQLite's own file lock on a small,
 * always empty database beside the real one, held for the process's life: the operating
 * system drops it when the process ends, however it ends, so a crash leaves nothing that
 * blocks the next start. Other commands (backup, keys, import) do not take it.
 */
import { basename, dirname, join } from "node:path";
import { closeSync, existsSync, openSync, readFileSync, realpathSync, rmSync, writeFileSync } from "node:fs";
import Database from "better-sqlite3";
import { PRIVATE_FILE_MODE, ensurePrivateFolder } from "./private-files.js";

export class ServeLockError extends Error {
  override name = "ServeLockError";
}

/** The database's path with its folder's links resolved, so that two spellings of one file share one lock. */
function resolvedPath(path: string): string {
  ensurePrivateFolder(dirname(path));
  return existsSync(path) ? realpathSync(path) : join(realpathSync(dirname(path)), basename(path));
}

/**
 * The pid the holder wrote, when it names a process that exists: the holder may not have
 * written it yet, or may have removed it on its way out; and a process killed outright leaves
 * its file behind, naming a process that has ended until the next holder writes its own.
 */
function holderPid(pidPath: string): number | undefined {
  let pid: number;
  try {
    pid = Number(readFileSync(pidPath, "utf8").trim());
  } catch {
    return undefined;
  }
  if (!Number.isSafeInteger(pid) || pid <= 0) return undefined;
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists, as another user's.
    if ((error as NodeJS.ErrnoException).code === "ESRCH") return undefined;
  }
  return pid;
}

/**
 * Takes the serving lock of the SQLite database at `path` for the rest of the process's life,
 * or throws a ServeLockError naming the process that holds it.
 */
export function holdServeLock(path: string): void {
  // A database in memory is the process's own.
  if (path === ":memory:") return;
  const database = resolvedPath(path);
  const lockPath = `${database}-serve.lock`;
  // The holder's pid, for the message only: the lock itself is what decides.
  const pidPath = `${database}-serve.pid`;
  // Made here only when missing: opening and closing it once SQLite holds it would drop the lock.
  if (!existsSync(lockPath)) closeSync(openSync(lockPath, "a", PRIVATE_FILE_MODE));
  const lock = new Database(lockPath, { timeout: 0 });
  try {
    // Nothing is ever written: the journal stays in memory and the file empty.
    lock.pragma("journal_mode = MEMORY");
    lock.exec("begin immediate");
  } catch (error) {
    lock.close();
    if (!(error instanceof Database.SqliteError && error.code.startsWith("SQLITE_BUSY"))) throw error;
    const pid = holderPid(pidPath);
    throw new ServeLockError(
      `another cribline process is serving ${database} (${pid === undefined ? "pid unknown" : `pid ${pid}`}): one process serves a SQLite database`,
      { cause: error },
    );
  }
  writeFileSync(pidPath, `${process.pid}\n`, { mode: PRIVATE_FILE_MODE });
  // The listener keeps the connection, and so the lock, alive until the process exits.
  process.once("exit", () => {
    rmSync(pidPath, { force: true });
    lock.close();
  });
}
