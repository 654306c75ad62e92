/** How the delivery loop runs: its limits, timings and the sources of time and chance (tests set them). */
import type { Busy } from "./ingestion.js";
import type { SendOptions } from "./http-post.js";

const SECOND = 1000;

export interface DeliveryOptions extends SendOptions {
  clock: () => number;
  /** Deliveries taken per round. */
  batchSize: number;
  /** How long a taken delivery is held by its process; longer than any attempt. */
  leaseMs: number;
  /** Random number in [0, 1) for the jitter. */
  random: () => number;
  /** Attempts under way at once in one process, at most; a round is taken only with room for it. */
  maxInFlight: number;
  /**
   * Attempts under way at once to one endpoint in one process, beyond which its deliveries wait
   * for later rounds: a slow endpoint cannot take the room the others need.
   */
  maxPerEndpoint: number;
  /**
   * How long an outcome may wait to be recorded with the outcomes that end after it: attempts
   * end one by one, and a commit each (an fsync on SQLite) cost more than the sending.
   */
  recordDelayMs: number;
  /**
   * Whether syncs keep this process busy, or a sibling process on the same machine (ingestion.ts).
   * The loop then gives way to them: a round starts at most every `yieldIntervalMs`, so a burst
   * of syncs is not slowed by the webhooks it causes, while at least `batchSize` deliveries per
   * interval still go.
   */
  ingesting: () => Busy;
  yieldIntervalMs: number;
  /** The interval when only a sibling process is busy with syncs: it sends its own share meanwhile. */
  siblingYieldIntervalMs: number;
  /**
   * The loop stops giving way once a due delivery it could send has waited longer than this:
   * syncs that never stop cannot hold webhooks back further.
   */
  maxYieldLagMs: number;
}

export const DEFAULT_DELIVERY_OPTIONS: DeliveryOptions = {
  clock: Date.now,
  batchSize: 50,
  leaseMs: 60 * SECOND,
  timeoutMs: 15 * SECOND,
  allowPrivate: false,
  random: Math.random,
  maxInFlight: 500,
  maxPerEndpoint: 20,
  recordDelayMs: 20,
  ingesting: () => undefined,
  yieldIntervalMs: SECOND,
  siblingYieldIntervalMs: 4 * SECOND,
  maxYieldLagMs: 10 * SECOND,
};
