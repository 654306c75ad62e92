/**
 * Sends the deliveries a round took, each on its own so that one slow or dead endpoint never
 * holds up the others, and hands each outcome to the recorder. It counts what is under way, in
 * all and per endpoint, which bounds what the next round may take.
 */
import type { Kysely } from "kysely";
import type { Schema } from "../../storage/schema.js";
import type { DeliveryOptions } from "./delivery.options.js";
import type { Taken } from "./lease.repository.js";
import { keyOf, loadRound } from "./payload.repository.js";
import type { Recorder } from "./recorder.js";
import { send } from "./sender.js";

export class Dispatcher {
  private readonly inFlight = new Set<Promise<void>>();
  /** Attempts under way per endpoint (keyOf tenant and endpoint). */
  private readonly perEndpoint = new Map<string, number>();

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly options: DeliveryOptions,
    private readonly recorder: Recorder,
    private readonly onError: (err: unknown) => void,
    /** Told when room opens up for more: an endpoint below its limit again, or the process. */
    private readonly onRoom: () => void,
  ) {}

  /** Attempts under way here, from taking to recording. */
  get size(): number {
    return this.inFlight.size;
  }

  /** How many attempts of an endpoint are under way here. */
  readonly underWay = (tenantId: number, endpointId: string): number => this.perEndpoint.get(keyOf(tenantId, endpointId)) ?? 0;

  /** Starts one attempt per delivery taken; each promise resolves once its outcome is recorded (or failed). */
  async dispatch(taken: readonly Taken[]): Promise<Promise<void>[]> {
    if (taken.length === 0) return [];
    const round = await loadRound(this.db, taken);
    return taken.map((t) => {
      const endpoint = keyOf(t.tenant_id, t.endpoint_id);
      this.perEndpoint.set(endpoint, this.underWay(t.tenant_id, t.endpoint_id) + 1);
      // The endpoint is busy with an attempt until it answers (or time runs out); the process
      // is until the attempt is recorded too.
      const answered = send(t, round, this.options).finally(() => {
        const left = (this.perEndpoint.get(endpoint) ?? 1) - 1;
        if (left === 0) this.perEndpoint.delete(endpoint);
        else this.perEndpoint.set(endpoint, left);
        // An endpoint that had all the attempts it may have can take more: take them now, not
        // at the next interval (its backlog drains as fast as it answers).
        if (left === this.options.maxPerEndpoint - 1) this.onRoom();
      });
      const sending = answered.then((outcome) => this.recorder.add(outcome)).catch(this.onError);
      this.inFlight.add(sending);
      void sending.finally(() => {
        this.inFlight.delete(sending);
        // A loop that waited for room goes on at once.
        if (this.inFlight.size === this.options.maxInFlight - this.options.batchSize) this.onRoom();
      });
      return sending;
    });
  }

  /** Resolves once every attempt under way is recorded. */
  async drained(): Promise<void> {
    await Promise.all(this.inFlight);
  }
}
