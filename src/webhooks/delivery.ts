/**
 * The delivery loop: takes due deliveries, sends them, and records each attempt. Any number of
 * processes may run it on one database: a delivery is taken with a lease (and, on PostgreSQL,
 * `FOR UPDATE SKIP LOCKED`), so no two send one attempt at once; a process that dies while
 * sending leaves its lease to expire, and the delivery is sent again with the same webhook-id.
 * Each delivery is sent on its own, so one slow or dead endpoint never holds up the others.
 */
import { randomBytes } from "node:crypto";
import { sql, type Kysely } from "kysely";
import { engineOf } from "../storage/engine.js";
import type { Schema } from "../storage/schema.js";
import { setEndpointDisabledIn } from "./endpoint.repository.js";
import { post, type SendOptions, type SendResult } from "./send.js";
import { webhookHeaders } from "./signature.js";

const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * Waits before the 2nd, 3rd, ... attempt: about three days in all (75.6 hours), each with
 * ±20 % jitter so that endpoints coming back are not hit by every retry at once.
 */
export const RETRY_DELAYS_MS = [5 * SECOND, 5 * MINUTE, 30 * MINUTE, 2 * HOUR, 5 * HOUR, 10 * HOUR, 14 * HOUR, 20 * HOUR, 24 * HOUR];
/** The longest wait a receiver's Retry-After may ask for. */
const MAX_RETRY_AFTER_MS = 24 * HOUR;

export interface DeliveryOptions extends SendOptions {
  clock: () => number;
  /** Deliveries taken per round. */
  batchSize: number;
  /** How long a taken delivery is held by its process; longer than any attempt. */
  leaseMs: number;
  /** Random number in [0, 1) for the jitter. */
  random: () => number;
}

export const DEFAULT_DELIVERY_OPTIONS: DeliveryOptions = {
  clock: Date.now,
  batchSize: 50,
  leaseMs: 60 * SECOND,
  timeoutMs: 15 * SECOND,
  allowPrivate: false,
  random: Math.random,
};

interface Taken {
  tenant_id: number;
  id: string;
  endpoint_id: string;
  message_id: string;
  attempts: number;
}

/** Takes up to `batchSize` due deliveries of enabled endpoints, leasing them to this process. */
async function take(db: Kysely<Schema>, now: number, options: DeliveryOptions): Promise<Taken[]> {
  let due = db
    .selectFrom("webhook_deliveries as d")
    .select(["d.tenant_id", "d.id"])
    .where("d.status", "=", "pending")
    .where("d.next_attempt_at", "<=", now)
    .where((eb) => eb.or([eb("d.lease_until", "is", null), eb("d.lease_until", "<=", now)]))
    .where((eb) =>
      eb.exists(
        eb
          .selectFrom("webhook_endpoints as e")
          .select(sql.lit(1).as("one"))
          .whereRef("e.tenant_id", "=", "d.tenant_id")
          .whereRef("e.id", "=", "d.endpoint_id")
          .where("e.disabled_at", "is", null),
      ),
    )
    .orderBy("d.next_attempt_at")
    .limit(sql.lit(options.batchSize));
  if (engineOf(db) === "postgres") due = due.forUpdate().skipLocked();
  return db
    .updateTable("webhook_deliveries")
    .set((eb) => ({ lease_until: now + options.leaseMs, attempts: eb("attempts", "+", 1), updated_at: now }))
    .where((eb) => eb(eb.refTuple("tenant_id", "id"), "in", due as never))
    .returning(["tenant_id", "id", "endpoint_id", "message_id", "attempts"])
    .execute();
}

/** When the next attempt is due after a failed one, or undefined when it was the last. */
export function nextAttemptAt(attempts: number, now: number, result: SendResult, random: () => number): number | undefined {
  const delay = RETRY_DELAYS_MS[attempts - 1];
  if (delay === undefined) return undefined;
  const jittered = Math.round(delay * (0.8 + 0.4 * random()));
  const asked = result.retryAfterSeconds === undefined ? 0 : Math.min(result.retryAfterSeconds * SECOND, MAX_RETRY_AFTER_MS);
  return now + Math.max(jittered, asked);
}

async function attempt(db: Kysely<Schema>, taken: Taken, options: DeliveryOptions): Promise<void> {
  const [message, endpoint] = await Promise.all([
    db
      .selectFrom("webhook_messages")
      .select(["type", "payload"])
      .where("tenant_id", "=", taken.tenant_id)
      .where("id", "=", taken.message_id)
      .executeTakeFirstOrThrow(),
    db
      .selectFrom("webhook_endpoints")
      .select(["url", "secret", "previous_secret", "previous_secret_until"])
      .where("tenant_id", "=", taken.tenant_id)
      .where("id", "=", taken.endpoint_id)
      .executeTakeFirst(),
  ]);
  const sentAt = options.clock();
  let result: SendResult;
  if (endpoint === undefined) {
    result = { error: "the endpoint was deleted", durationMs: 0 };
  } else {
    const secrets = [endpoint.secret];
    if (endpoint.previous_secret !== null && (endpoint.previous_secret_until ?? 0) > sentAt) secrets.push(endpoint.previous_secret);
    const headers = webhookHeaders(secrets, taken.message_id, Math.floor(sentAt / SECOND), message.payload);
    result = await post(endpoint.url, headers, message.payload, options);
  }
  await record(db, taken, message.type, result, endpoint === undefined, options);
}

/** Records an attempt and what it means for the delivery (and, on 410, its endpoint). */
async function record(
  db: Kysely<Schema>,
  taken: Taken,
  eventType: string,
  result: SendResult,
  gone: boolean,
  options: DeliveryOptions,
): Promise<void> {
  const now = options.clock();
  const succeeded = result.status !== undefined && result.status >= 200 && result.status < 300;
  const endpointGone = gone || result.status === 410;
  const next = succeeded || endpointGone ? undefined : nextAttemptAt(taken.attempts, now, result, options.random);
  const status = succeeded ? "succeeded" : next === undefined ? "failed" : "pending";
  await db.transaction().execute(async (trx) => {
    await trx
      .insertInto("webhook_attempts")
      .values({
        tenant_id: taken.tenant_id,
        id: `att_${randomBytes(12).toString("base64url")}`,
        delivery_id: taken.id,
        endpoint_id: taken.endpoint_id,
        message_id: taken.message_id,
        event_type: eventType,
        attempted_at: now - result.durationMs,
        status_code: result.status ?? null,
        duration_ms: result.durationMs,
        error: result.error ?? (succeeded ? null : `HTTP ${result.status}`),
        next_attempt_at: next ?? null,
      })
      .execute();
    await trx
      .updateTable("webhook_deliveries")
      .set({ status, next_attempt_at: next ?? null, lease_until: null, updated_at: now })
      .where("tenant_id", "=", taken.tenant_id)
      .where("id", "=", taken.id)
      .execute();
    // Its other pending deliveries are paused with it (an admin may enable it again).
    if (result.status === 410) await setEndpointDisabledIn(trx, taken.tenant_id, taken.endpoint_id, "the endpoint answered 410 Gone", now);
  });
}

export class DeliveryLoop {
  private readonly options: DeliveryOptions;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<unknown> = Promise.resolve();
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly db: Kysely<Schema>,
    options: Partial<DeliveryOptions> = {},
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {
    this.options = { ...DEFAULT_DELIVERY_OPTIONS, ...options };
  }

  /**
   * Takes what is due now and starts sending it; resolves when those attempts are recorded.
   * Returns how many deliveries it took.
   */
  async runOnce(): Promise<number> {
    const taken = await take(this.db, this.options.clock(), this.options);
    await Promise.all(this.dispatch(taken));
    return taken.length;
  }

  /** Starts one attempt per delivery taken, each tracked until it is recorded. */
  private dispatch(taken: Taken[]): Promise<void>[] {
    return taken.map((t) => {
      const sending = attempt(this.db, t, this.options).catch(this.onError);
      this.inFlight.add(sending);
      void sending.finally(() => this.inFlight.delete(sending));
      return sending;
    });
  }

  /** Polls every `intervalMs`; attempts run concurrently, each bounded by its timeout. */
  start(intervalMs = 500): void {
    const tick = () => {
      this.running = take(this.db, this.options.clock(), this.options)
        .then((taken) => this.dispatch(taken))
        .catch(this.onError)
        .finally(() => {
          if (this.timer !== undefined) this.timer = setTimeout(tick, intervalMs).unref();
        });
    };
    this.timer = setTimeout(tick, 0).unref();
  }

  /** Stops polling and waits for the attempts in flight to be recorded. */
  async stop(): Promise<void> {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
    await Promise.all(this.inFlight);
  }
}
