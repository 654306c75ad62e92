/**
 * The delivery loop: it only decides when a round runs. A round takes what is due
 * (round.service.ts), and the dispatcher sends it and has each attempt recorded. Any number of
 * processes may run it on one database: a delivery is taken with a lease (and, where the engine
 * has row locks, passed over by the others while locked), so no two send one attempt at once;
 * a process that dies while sending leaves its lease to expire, and the delivery is sent again
 * with the same webhook-id.
 */
import type { Kysely } from "kysely";
import type { Schema } from "../../storage/schema.js";
import { DEFAULT_DELIVERY_OPTIONS, type DeliveryOptions } from "./delivery.options.js";
import { Dispatcher } from "./dispatcher.js";
import { Recorder } from "./recorder.js";
import { takeRound } from "./round.service.js";

export class DeliveryLoop {
  private readonly options: DeliveryOptions;
  private readonly dispatcher: Dispatcher;
  private timer: NodeJS.Timeout | undefined;
  private intervalMs = 500;
  /** A wake came while a round was under way: run another as soon as it ends. */
  private again = false;
  private started = false;
  private stopped = true;
  private running: Promise<unknown> = Promise.resolve();
  /** When the last round began (performance.now()), and what it found waiting longest. */
  private lastRound = { startedAt: -Infinity, oldestDue: null as number | null };

  constructor(
    private readonly db: Kysely<Schema>,
    options: Partial<DeliveryOptions> = {},
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {
    this.options = { ...DEFAULT_DELIVERY_OPTIONS, ...options };
    const recorder = new Recorder(db, this.options.random, this.options.recordDelayMs);
    this.dispatcher = new Dispatcher(db, this.options, recorder, onError, () => this.wake());
  }

  /**
   * Takes what is due now and starts sending it; resolves when those attempts are recorded.
   * Returns how many deliveries it took.
   */
  async runOnce(): Promise<number> {
    const { taken } = await takeRound(this.db, this.options.clock(), this.options, this.dispatcher.underWay);
    await Promise.all(await this.dispatcher.dispatch(taken));
    return taken.length;
  }

  /**
   * Runs a round every `intervalMs`, and at once again after a full round (more is due) as long
   * as fewer than `maxInFlight` attempts are under way, unless it gives way to sync (`ingesting`).
   */
  start(intervalMs = 500): void {
    this.intervalMs = intervalMs;
    this.started = true;
    this.stopped = false;
    this.schedule(0);
  }

  /** Runs a round now instead of at the next interval (or right after the round under way). */
  wake(): void {
    if (this.stopped || !this.started) return;
    if (this.timer === undefined) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.schedule(0);
  }

  /** Stops running rounds and waits for the attempts in flight to be recorded. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
    await this.dispatcher.drained();
  }

  private readonly tick = (): void => {
    this.timer = undefined;
    this.again = false;
    let full = false;
    const { batchSize, maxInFlight, clock } = this.options;
    const room = this.dispatcher.size + batchSize <= maxInFlight;
    if (room) this.lastRound.startedAt = performance.now();
    this.running = (room ? takeRound(this.db, clock(), this.options, this.dispatcher.underWay) : Promise.resolve(undefined))
      .then((round) => {
        if (round === undefined) return [];
        // Endpoints all at their limit say nothing of the lag: the last that did stands.
        if (round.oldestDue !== undefined) this.lastRound.oldestDue = round.oldestDue;
        full = round.taken.length === batchSize;
        return this.dispatcher.dispatch(round.taken);
      })
      .catch(this.onError)
      .finally(() => {
        if (!this.stopped && this.timer === undefined) this.schedule(full || this.again ? 0 : this.intervalMs);
      });
  };

  /** The next round in `delayMs`, or later when the loop gives way to sync. */
  private schedule(delayMs: number): void {
    this.timer = setTimeout(this.tick, Math.max(delayMs, this.givingWayFor())).unref();
  }

  /**
   * How long the next round waits for sync: until `yieldIntervalMs` after the last began while
   * syncs are served, unless what is due has waited longer than `maxYieldLagMs`.
   */
  private givingWayFor(): number {
    const { ingesting, yieldIntervalMs, siblingYieldIntervalMs, maxYieldLagMs, clock } = this.options;
    const busy = ingesting();
    if (busy === undefined) return 0;
    const { startedAt, oldestDue } = this.lastRound;
    if (oldestDue !== null && clock() - oldestDue > maxYieldLagMs) return 0;
    return Math.max(0, startedAt + (busy === "here" ? yieldIntervalMs : siblingYieldIntervalMs) - performance.now());
  }
}
