/**
 * When each key was last used, kept without a database write per request: a process notes the
 * time of each key's latest request in memory and writes the notes every FLUSH_MS, one update
 * per key used meanwhile, never moving a key's time back (another process may have written a
 * later one). `lastUsedAt` is therefore the time of a real request, shown up to FLUSH_MS late;
 * a process that dies loses its unwritten notes, and the next request writes them again.
 */
import type { Kysely } from "kysely";
import type { Schema } from "../storage/schema.js";
import { recordKeyUse } from "./tenant.repository.js";

export const KEY_USAGE_FLUSH_MS = 60_000;

export class KeyUsage {
  private pending = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly onError: (error: unknown) => void,
    private readonly flushMs = KEY_USAGE_FLUSH_MS,
  ) {}

  /** Notes a request authenticated by the key with this hash. */
  used(keyHash: string, at: number): void {
    const noted = this.pending.get(keyHash);
    if (noted === undefined || noted < at) this.pending.set(keyHash, at);
    this.timer ??= setTimeout(() => void this.flush(), this.flushMs).unref();
  }

  /** Writes the notes taken so far; a failed write keeps them for the next. */
  flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const uses = this.pending;
    if (uses.size === 0) return this.flushing;
    this.pending = new Map();
    this.flushing = this.flushing.then(async () => {
      try {
        await recordKeyUse(this.db, uses);
      } catch (error) {
        for (const [hash, at] of uses) this.used(hash, at);
        this.onError(error);
      }
    });
    return this.flushing;
  }
}
