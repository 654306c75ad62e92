/**
 * Modes for the files of the embedded database, its backups and its folder: they hold webhook
 * signing secrets, the cursor secret and key hashes, so only their owner may read them.
 */
import { chmodSync, mkdirSync, statSync } from "node:fs";

export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_FOLDER_MODE = 0o700;

/** Creates the folder (and any missing above it) owner-only; one that exists is left as it is. */
export function ensurePrivateFolder(path: string): void {
  mkdirSync(path, { recursive: true, mode: PRIVATE_FOLDER_MODE });
}

/**
 * Sets an existing file of this process's owner that the group or others may use to exactly
 * 0600, as a file cribline creates is; a missing file, or one that another user owns (chmod is
 * theirs to decide), is left alone.
 */
export function tightenToOwner(path: string): void {
  let stat;
  try {
    stat = statSync(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return;
    throw error;
  }
  if ((stat.mode & 0o077) === 0 || stat.uid !== process.getuid?.()) return;
  chmodSync(path, PRIVATE_FILE_MODE);
}
