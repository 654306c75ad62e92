/**
 * Group commit of attempts: an outcome waits up to `delayMs` for the ones that end after it (or
 * until `MAX_GROUP` have queued), and they are recorded in one transaction, so a busy loop
 * commits a few times per round, not once per attempt. The commit does not wait for the disk:
 * an outcome lost with its process or machine leaves its delivery's lease to expire, and the
 * delivery is sent again (at least once).
 */
import type { Kysely, Transaction } from "kysely";
import { countAttempts } from "../../metrics/metrics.js";
import { engineOf } from "../../storage/engine.js";
import type { Schema } from "../../storage/schema.js";
import { setEndpointDisabled } from "../endpoint.repository.js";
import { ATTEMPT_ID_PREFIX, newId } from "../ids.js";
import { insertAttempts, settle, type Settled } from "./outcome.repository.js";
import { disablesEndpoint, isSuccess, judge } from "./retry-policy.js";
import type { Outcome } from "./sender.js";

/** Outcomes recorded in one transaction at most. */
const MAX_GROUP = 500;

/** Records attempts and what each means for its delivery, in the caller's transaction. */
async function record(trx: Transaction<Schema>, outcomes: readonly Outcome[], random: () => number): Promise<void> {
  await engineOf(trx).planForNow(trx);
  const attempts: unknown[][] = [];
  const settled: Settled[] = [];
  for (const { taken, eventType, result, final, at } of outcomes) {
    const verdict = judge(taken.attempts, at, result, final, random);
    settled.push({ taken, at, ...verdict });
    attempts.push([
      taken.tenant_id,
      newId(ATTEMPT_ID_PREFIX, at),
      taken.id,
      taken.endpoint_id,
      taken.message_id,
      eventType,
      at - result.durationMs,
      result.status ?? null,
      result.durationMs,
      result.error ?? (isSuccess(result.status) ? null : `HTTP ${result.status}`),
      verdict.next,
    ]);
  }
  await settle(trx, settled);
  await insertAttempts(trx, attempts);
}

export class Recorder {
  private queue: { outcome: Outcome; done: (error?: unknown) => void }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing = false;

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly random: () => number,
    private readonly delayMs: number,
  ) {}

  /** Resolves once the outcome is committed (and, on a 410, its endpoint disabled). */
  add(outcome: Outcome): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ outcome, done: (error) => (error === undefined ? resolve() : reject(error)) });
      if (this.queue.length >= MAX_GROUP) this.flush();
      else this.timer ??= setTimeout(() => this.flush(), this.delayMs);
    });
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    void this.write();
  }

  private async write(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    while (this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_GROUP);
      const outcomes = batch.map((b) => b.outcome);
      let failure: unknown;
      try {
        await engineOf(this.db).relaxedTransaction(this.db, (trx) => record(trx, outcomes, this.random));
        countAttempts(outcomes.map(({ result }) => ({ succeeded: isSuccess(result.status), durationMs: result.durationMs })));
      } catch (error) {
        // Not recorded: each delivery's lease expires and it is sent again.
        failure = error;
      }
      if (failure === undefined)
        failure = await this.disableGone(outcomes).catch((error: unknown) => error ?? new Error("disabling failed"));
      for (const b of batch) b.done(failure);
    }
    this.writing = false;
  }

  /**
   * A 410 disables its endpoint (an admin may enable it again), pausing its other pending
   * deliveries: once the attempt is recorded, in a transaction of its own that takes its locks
   * as an admin's disable does (locks.repository.ts), so that the lock order stays one.
   */
  private async disableGone(outcomes: readonly Outcome[]): Promise<void> {
    for (const { taken, result, at } of outcomes) {
      if (disablesEndpoint(result))
        await setEndpointDisabled(this.db, taken.tenant_id, taken.endpoint_id, "the endpoint answered 410 Gone", at);
    }
  }
}
