/**
 * Ingestion first: whether this process is kept busy serving sync requests, which the delivery
 * loop then gives way to (delivery.ts, `DeliveryOptions.ingesting`). A sync's devices wait for
 * its answer; a webhook can go a moment later. Busy means that syncs were under way for most of
 * the last few hundred milliseconds, not merely that one is: an occasional small sync does not
 * slow webhooks, a burst of batches does. Under `serve --workers` each worker also hears from
 * its siblings (workers.ts), since they share the machine's cores.
 */

/** Other processes on this machine serving the same database (under `serve --workers`, the siblings). */
export interface Siblings {
  /** Tells them that this process is busy with syncs. */
  tell(): void;
  /** Calls `listener` whenever one of them tells. */
  hear(listener: () => void): void;
}

export type Busy = "here" | "sibling" | undefined;

/** How quickly the share of time spent on syncs forgets the past (the time constant of its average). */
const MEMORY_MS = 200;
/** Busy above this share of recent time. */
const BUSY_SHARE = 0.5;
/** How often a busy process tells its siblings, at most. */
const TELL_EVERY_MS = 50;
/** How long a sibling's word counts: a few of its tellings, so that one late message does not matter. */
const HEARD_FOR_MS = 3 * TELL_EVERY_MS;

export class Ingestion {
  private underWay = 0;
  /** The share of recent time with a sync under way, as of `since`. */
  private share = 0;
  private since: number;
  /** Until when a sibling process said it is busy with syncs. */
  private elsewhereUntil = 0;
  /** When this process last told its siblings. */
  private toldAt = -Infinity;

  constructor(
    private readonly clock: () => number = Date.now,
    /** Told at most every `TELL_EVERY_MS` while this process is busy with syncs, and heard from. */
    private readonly siblings?: Siblings,
  ) {
    this.since = clock();
    siblings?.hear(() => (this.elsewhereUntil = this.clock() + HEARD_FOR_MS));
  }

  /** Syncs under way in this process now. */
  get serving(): number {
    return this.underWay;
  }

  /** A sync request began; the function returned ends it (once, however often it is called). */
  begin(): () => void {
    this.advance();
    this.underWay += 1;
    if (this.busyHere() && this.since - this.toldAt >= TELL_EVERY_MS) {
      this.toldAt = this.since;
      this.siblings?.tell();
    }
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.advance();
      this.underWay -= 1;
    };
  }

  /** Whether syncs kept this process busy lately ("here"), or else a sibling process said they keep it busy ("sibling"). */
  busy(): Busy {
    this.advance();
    if (this.busyHere()) return "here";
    return this.clock() < this.elsewhereUntil ? "sibling" : undefined;
  }

  private busyHere(): boolean {
    return this.share > BUSY_SHARE;
  }

  /** Moves the average to now: towards 1 over time with a sync under way, towards 0 without. */
  private advance(): void {
    const now = this.clock();
    const kept = Math.exp(-Math.max(0, now - this.since) / MEMORY_MS);
    this.share = this.underWay > 0 ? 1 - (1 - this.share) * kept : this.share * kept;
    this.since = now;
  }
}
