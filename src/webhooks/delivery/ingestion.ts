/**
 * Ingestion first: whether syncs keep this process (or, under `serve --workers`, the machine)
 * busy, which the delivery loop then gives way to (delivery.ts, `DeliveryOptions.ingesting`).
 * A sync's devices wait for its answer; a webhook can go a moment later. Busy means that syncs
 * were under way for most of the last few hundred milliseconds, not merely that one is: an
 * occasional small sync does not slow webhooks, a burst of batches does. Workers tell each
 * other their share (workers.ts), since they share the machine's cores, and connections (so
 * syncs) may be spread over them.
 */

/** Other processes on this machine serving the same database (under `serve --workers`, the siblings). */
export interface Siblings {
  /** Tells them this process's share of recent time spent with a sync under way. */
  tell(share: number): void;
  /** Calls `listener` whenever one of them tells (`from` tells them apart). */
  hear(listener: (from: number, share: number) => void): void;
}

/** "here": syncs keep this process busy; "sibling": only counting its siblings' syncs are there enough. */
export type Busy = "here" | "sibling" | undefined;

/** How quickly a share of time forgets the past (the time constant of its moving average). */
const MEMORY_MS = 200;
/** Busy above this share of recent time. */
const BUSY_SHARE = 0.5;
/** How often a process serving syncs tells its siblings, at most. */
const TELL_EVERY_MS = 50;

/** `share` moved on by `ms`: towards 1 while `active`, towards 0 otherwise. */
const decayed = (share: number, active: boolean, ms: number): number => {
  const kept = Math.exp(-Math.max(0, ms) / MEMORY_MS);
  return active ? 1 - (1 - share) * kept : share * kept;
};

export class Ingestion {
  private underWay = 0;
  /** The share of recent time with a sync under way here, as of `since`. */
  private share = 0;
  private since: number;
  /** What each sibling last told, and when: it fades as if idle since (it tells again if it is not). */
  private readonly heard = new Map<number, { share: number; at: number }>();
  /** When this process last told its siblings. */
  private toldAt = -Infinity;

  constructor(
    private readonly clock: () => number = Date.now,
    /** Told at most every `TELL_EVERY_MS` as syncs begin and end here, and heard from. */
    private readonly siblings?: Siblings,
  ) {
    this.since = clock();
    siblings?.hear((from, share) => this.heard.set(from, { share, at: this.clock() }));
  }

  /** Syncs under way in this process now. */
  get serving(): number {
    return this.underWay;
  }

  /** A sync request began; the function returned ends it (once, however often it is called). */
  begin(): () => void {
    this.change(+1);
    let ended = false;
    return () => {
      if (ended) return;
      ended = true;
      this.change(-1);
    };
  }

  /** Whether syncs kept this process busy lately, or else the machine, counting its siblings'. */
  busy(): Busy {
    this.advance();
    if (this.share > BUSY_SHARE) return "here";
    const now = this.clock();
    let machine = this.share;
    for (const { share, at } of this.heard.values()) machine += decayed(share, false, now - at);
    return machine > BUSY_SHARE ? "sibling" : undefined;
  }

  private change(by: number): void {
    this.advance();
    this.underWay += by;
    if (this.siblings !== undefined && this.since - this.toldAt >= TELL_EVERY_MS) {
      this.toldAt = this.since;
      this.siblings.tell(this.share);
    }
  }

  private advance(): void {
    const now = this.clock();
    this.share = decayed(this.share, this.underWay > 0, now - this.since);
    this.since = now;
  }
}
