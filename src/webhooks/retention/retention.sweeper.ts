/**
 * Keeps the webhook log and the events from growing for ever: every process prunes them now
 * and then (retention.repository.ts says what goes). Deletes are idempotent, so processes sweeping at
 * the same time only repeat a little work; each sweep is short transactions with as long a
 * rest after each, so syncs and pages keep the database.
 */
import { setTimeout as wait } from "node:timers/promises";
import type { Kysely } from "kysely";
import { keptSince } from "../../platform/config.js";
import type { Schema } from "../../storage/schema.js";
import { pruneWebhookLog, type Pruned } from "./retention.repository.js";

const MINUTE = 60_000;

export interface RetentionOptions {
  /** How long attempts and ended deliveries are kept; 0: for ever. */
  keepDays: number;
  /** How long events are kept; 0: for ever. */
  eventKeepDays: number;
  clock: () => number;
  /** The first sweep, after start: not in the way of a start-up. */
  firstAfterMs: number;
  /** Between sweeps, ±10 % so that processes started together spread out. */
  intervalMs: number;
  /** Rows per transaction. */
  chunk: number;
  random: () => number;
}

export const DEFAULT_RETENTION_OPTIONS: Omit<RetentionOptions, "keepDays" | "eventKeepDays"> = {
  clock: Date.now,
  firstAfterMs: MINUTE,
  intervalMs: 60 * MINUTE,
  chunk: 500,
  random: Math.random,
};

export class RetentionSweeper {
  private readonly options: RetentionOptions;
  private timer: NodeJS.Timeout | undefined;
  private sweeping: Promise<unknown> = Promise.resolve();
  private stopped = true;
  /** Set by stop: a sweep under way ends at its next pause. */
  private ending = false;

  constructor(
    private readonly db: Kysely<Schema>,
    options: Partial<RetentionOptions> & Pick<RetentionOptions, "keepDays" | "eventKeepDays">,
    private readonly onSwept: (pruned: Pruned) => void = () => undefined,
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {
    this.options = { ...DEFAULT_RETENTION_OPTIONS, ...options };
  }

  /**
   * Deletes what is older than the retention period now; resolves with what went. Once stop()
   * is called it ends at its next pause, between two short transactions.
   */
  sweep(): Promise<Pruned> {
    const { keepDays, eventKeepDays, clock, chunk } = this.options;
    let worked = performance.now();
    // 0: a cut-off before every row.
    const cutOff = (days: number) => keptSince(days, clock()) ?? 0;
    const swept = pruneWebhookLog(this.db, {
      before: cutOff(keepDays),
      eventsBefore: cutOff(eventKeepDays),
      chunk,
      pause: async () => {
        if (this.ending) return false;
        // Rests as long as it last worked: a sweep takes at most half of the database's time,
        // which a PostgreSQL server spends on its own cores whatever this event loop does.
        await wait(performance.now() - worked, undefined, { ref: false });
        worked = performance.now();
        return !this.ending;
      },
    });
    this.sweeping = swept.catch(() => undefined);
    return swept;
  }

  start(): void {
    this.stopped = false;
    this.ending = false;
    this.schedule(this.options.firstAfterMs);
  }

  /** Stops sweeping; resolves once a sweep under way has ended (at its next pause). */
  async stop(): Promise<void> {
    this.stopped = true;
    this.ending = true;
    clearTimeout(this.timer);
    await this.sweeping;
  }

  private schedule(delayMs: number): void {
    this.timer = setTimeout(() => {
      void this.sweep()
        .then(this.onSwept, this.onError)
        .finally(() => {
          if (!this.stopped) this.schedule(this.options.intervalMs * (0.9 + 0.2 * this.options.random()));
        });
    }, delayMs).unref();
  }
}
