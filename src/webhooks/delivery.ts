/**
 * The delivery loop: takes due deliveries, sends them, and records each attempt. Any number of
 * processes may run it on one database: a delivery is taken with a lease (and, on PostgreSQL,
 * `FOR UPDATE SKIP LOCKED`), so no two send one attempt at once; a process that dies while
 * sending leaves its lease to expire, and the delivery is sent again with the same webhook-id.
 * Each delivery is sent on its own, so one slow or dead endpoint never holds up the others.
 */
import { sql, type Kysely, type RawBuilder, type SqlBool, type Transaction } from "kysely";
import { toApiJson } from "../collections/record.js";
import { COLLECTIONS } from "../collections/registry.js";
import { engineOf, planForNow, relaxedTransaction } from "../storage/engine.js";
import { fixedChunks, insertMany, QueryTemplates } from "../storage/query-template.js";
import type { RecordRow, Schema, WebhookEndpointTable, WebhookMessageTable } from "../storage/schema.js";
import { setEndpointDisabledIn } from "./endpoint.repository.js";
import type { Busy } from "./ingestion.js";
import { eventType } from "./events.js";
import { ATTEMPT_ID_PREFIX, DELIVERY_ID_PREFIX, messagePayload, newId } from "./outbox.js";
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

interface Taken {
  tenant_id: number;
  id: string;
  endpoint_id: string;
  message_id: string;
  attempts: number;
}

const DELIVERY_COLUMNS = [
  "tenant_id",
  "id",
  "endpoint_id",
  "message_id",
  "status",
  "attempts",
  "next_attempt_at",
  "lease_until",
  "created_at",
  "updated_at",
];

/**
 * Makes an endpoint's oldest fan-outs (outbox.ts) deliveries until at least `want` of its
 * deliveries are due or none is left, in the caller's transaction: a fan-out is either still
 * there or wholly expanded. Each becomes a pending delivery per message, due since its batch
 * was written and with an id of that time (so a replay of a time range finds it). Expanding
 * only what the endpoint can take soon keeps the deliveries' tables small however far sync
 * runs ahead, and the work off sync's transaction. On PostgreSQL a fan-out that another
 * process is expanding is left to it.
 */
export async function expandFanouts(trx: Transaction<Schema>, tenantId: number, endpointId: string, now: number, want: number) {
  const counted = await trx
    .selectFrom((eb) =>
      eb
        .selectFrom("webhook_deliveries")
        .select("id")
        .where("tenant_id", "=", tenantId)
        .where("endpoint_id", "=", endpointId)
        .where("status", "=", sql.lit("pending"))
        .where("next_attempt_at", "<=", now)
        .limit(sql.lit(want))
        .as("due"),
    )
    .select((eb) => eb.fn.countAll<number | string>().as("n"))
    .executeTakeFirstOrThrow();
  let due = Number(counted.n);
  while (due < want) {
    let oldest = trx
      .selectFrom("webhook_fanouts")
      .select(["id", "created_at", "message_ids"])
      .where("tenant_id", "=", tenantId)
      .where("endpoint_id", "=", endpointId)
      .orderBy("id")
      .limit(sql.lit(1));
    if (engineOf(trx) === "postgres") oldest = oldest.forUpdate().skipLocked();
    const fanout = await oldest.executeTakeFirst();
    if (fanout === undefined) return;
    const at = fanout.created_at;
    const rows = fanout.message_ids
      .split(" ")
      .map((messageId) => [tenantId, newId(DELIVERY_ID_PREFIX, at), endpointId, messageId, "pending", 0, at, null, at, now]);
    await insertMany(trx, "webhook_deliveries", DELIVERY_COLUMNS, rows);
    await trx
      .deleteFrom("webhook_fanouts")
      .where("tenant_id", "=", tenantId)
      .where("endpoint_id", "=", endpointId)
      .where("id", "=", fanout.id)
      .execute();
    due += rows.length;
  }
}

interface Round {
  taken: Taken[];
  /**
   * Since when the oldest delivery (or fan-out) due at an endpoint with room has waited: null
   * when nothing is due, undefined when every endpoint with something due is at its limit.
   */
  oldestDue: number | null | undefined;
}

/**
 * Takes up to `batchSize` due deliveries of enabled endpoints and leases them to this process:
 * endpoint by endpoint, the one whose oldest due delivery (or fan-out) is oldest first, each as
 * many as it may still start (`maxPerEndpoint` less `underWay`), its fan-outs made deliveries
 * first when fewer than that are due (see expandFanouts). Every query reads one endpoint's
 * range of an index, so neither a long backlog nor an endpoint at its limit costs the others a
 * scan.
 */
async function take(
  db: Kysely<Schema>,
  now: number,
  options: DeliveryOptions,
  underWay: (tenantId: number, endpointId: string) => number,
): Promise<Round> {
  // Lost with the machine, a lease only lets the delivery be taken again (at least once).
  return relaxedTransaction(db, async (trx: Transaction<Schema>) => {
    await planForNow(trx);
    const endpoints = await trx
      .selectFrom("webhook_endpoints as e")
      .select(["e.tenant_id", "e.id"])
      .select((eb) =>
        eb
          .selectFrom("webhook_deliveries as d")
          .select("d.next_attempt_at")
          .whereRef("d.tenant_id", "=", "e.tenant_id")
          .whereRef("d.endpoint_id", "=", "e.id")
          // A literal, not a parameter, so that a generic plan too can use the partial index.
          .where("d.status", "=", sql.lit("pending"))
          // A parameter, not only a filter: a statement without one keeps its first plan,
          // and on PostgreSQL that was made when the table was empty (a scan).
          .where("d.next_attempt_at", "<=", now)
          .orderBy("d.next_attempt_at")
          .limit(sql.lit(1))
          .as("oldest"),
      )
      .select((eb) =>
        eb
          .selectFrom("webhook_fanouts as f")
          .select("f.created_at")
          .whereRef("f.tenant_id", "=", "e.tenant_id")
          .whereRef("f.endpoint_id", "=", "e.id")
          .orderBy("f.id")
          .limit(sql.lit(1))
          .as("fanout"),
      )
      .where("e.disabled_at", "is", null)
      .execute();
    const since = (e: (typeof endpoints)[number]) => e.oldest ?? e.fanout;
    const due = endpoints.filter((e) => since(e) !== null).sort((a, b) => since(a)! - since(b)!);
    const taken: Taken[] = [];
    let oldestDue: number | undefined;
    for (const endpoint of due) {
      const free = options.maxPerEndpoint - underWay(endpoint.tenant_id, endpoint.id);
      if (free > 0) oldestDue ??= since(endpoint)!;
      const room = Math.min(free, options.batchSize - taken.length);
      if (room <= 0) continue;
      if (endpoint.fanout !== null) await expandFanouts(trx, endpoint.tenant_id, endpoint.id, now, options.maxPerEndpoint);
      let next = trx
        .selectFrom("webhook_deliveries as d")
        .select(["d.tenant_id", "d.endpoint_id", "d.id"])
        .where("d.tenant_id", "=", endpoint.tenant_id)
        .where("d.endpoint_id", "=", endpoint.id)
        .where("d.status", "=", sql.lit("pending"))
        .where("d.next_attempt_at", "<=", now)
        .where((eb) => eb.or([eb("d.lease_until", "is", null), eb("d.lease_until", "<=", now)]))
        .orderBy("d.next_attempt_at")
        .limit(room);
      // Another process may be taking the same rows: each takes the ones the other did not lock.
      if (engineOf(trx) === "postgres") next = next.forUpdate().skipLocked();
      const leased = await trx
        .updateTable("webhook_deliveries")
        .set((eb) => ({ lease_until: now + options.leaseMs, attempts: eb("attempts", "+", 1), updated_at: now }))
        .where((eb) => eb(eb.refTuple("tenant_id", "endpoint_id", "id"), "in", next as never))
        .returning(["tenant_id", "id", "endpoint_id", "message_id", "attempts"])
        .execute();
      taken.push(...leased);
      if (taken.length === options.batchSize) break;
    }
    return { taken, oldestDue: due.length === 0 ? null : oldestDue };
  });
}

/** When the next attempt is due after a failed one, or undefined when it was the last. */
export function nextAttemptAt(attempts: number, now: number, result: SendResult, random: () => number): number | undefined {
  const delay = RETRY_DELAYS_MS[attempts - 1];
  if (delay === undefined) return undefined;
  const jittered = Math.round(delay * (0.8 + 0.4 * random()));
  const asked = result.retryAfterSeconds === undefined ? 0 : Math.min(result.retryAfterSeconds * SECOND, MAX_RETRY_AFTER_MS);
  return now + Math.max(jittered, asked);
}

/** `(a, b, …) in ((…, …, …), …)`: the columns' values are one of the given rows. */
function keysIn(columns: readonly string[], rows: readonly (readonly unknown[])[]): RawBuilder<SqlBool> {
  const values = sql.join(rows.map((row) => sql`(${sql.join(row)})`));
  return sql<SqlBool>`(${sql.join(columns.map((c) => sql.ref(c)))}) in (${values})`;
}

const rowQueries = new QueryTemplates<any>();

/**
 * Runs the statement `build` makes over `rows` (each of the same width) from a template of its
 * shape and row count: built and compiled once, not per call (building a few hundred rows of
 * `sql` fragments each time stood out in the loop's CPU profile on PostgreSQL).
 */
async function overRows<R>(
  db: Kysely<Schema>,
  shape: string,
  rows: readonly (readonly unknown[])[],
  build: (slots: unknown[][]) => RawBuilder<R>,
): Promise<R[]> {
  const width = rows[0]!.length;
  const query = rowQueries.fill(db, `${shape}:${rows.length}`, rows.flat(), (s) => {
    const built = build(rows.map((_, r) => Array.from({ length: width }, (_, c) => s[r * width + c])));
    return { compile: () => built.compile(db) };
  });
  return (await db.executeQuery<R>(query)).rows;
}

/** A key of (tenant_id, id) as one string, for maps. */
const keyOf = (tenantId: number, id: string) => `${tenantId} ${id}`;

/** Distinct (tenant_id, id) pairs, in runs of a few fixed sizes (see fixedChunks). */
function chunksOf(pairs: readonly [number, string][]): [number, string][][] {
  return fixedChunks([...new Map(pairs.map((pair) => [keyOf(...pair), pair])).values()]);
}

/** A message as stored: its payload null for a transaction's until built from its record (see withPayloads). */
export type MessageRow = WebhookMessageTable;

type EndpointRow = Pick<WebhookEndpointTable, "tenant_id" | "id" | "url" | "secret" | "previous_secret" | "previous_secret_until">;

/** The rows of `table` with the given (tenant_id, id) keys, by keyOf: a statement per run of keys. */
async function rowsByKey<R extends { tenant_id: number; id: string }>(
  db: Kysely<Schema>,
  table: string,
  columns: readonly (keyof R & string)[],
  keys: readonly [number, string][],
): Promise<Map<string, R>> {
  const found = new Map<string, R>();
  for (const part of chunksOf(keys)) {
    const rows = await overRows<R>(
      db,
      `${table}(${columns.join(",")})`,
      part,
      (slots) =>
        sql`select ${sql.join(columns.map((c) => sql.ref(c)))} from ${sql.table(table)} where ${keysIn(["tenant_id", "id"], slots)}`,
    );
    for (const row of rows) found.set(keyOf(row.tenant_id, row.id), row);
  }
  return found;
}

/** The collection whose records a `created` event without a payload announces: a transaction's. */
const ANNOUNCED = new Map(COLLECTIONS.filter((c) => c.kind === "transaction").map((c) => [eventType(c, "created"), c]));

/**
 * Builds the payload of each transaction's message from its record as stored, which is what
 * its list returns: a transaction never changes, so it is what the payload was when the
 * record was synced. A few queries per round, one per collection and run of records.
 */
export async function withPayloads(db: Kysely<Schema>, messages: readonly MessageRow[]): Promise<void> {
  const byType = new Map<string, MessageRow[]>();
  for (const message of messages) {
    if (message.payload !== null) continue;
    const waiting = byType.get(message.type);
    if (waiting === undefined) byType.set(message.type, [message]);
    else waiting.push(message);
  }
  for (const [type, waiting] of byType) {
    const collection = ANNOUNCED.get(type);
    if (collection === undefined) throw new Error(`message ${waiting[0]!.id} of type ${type} has no payload`);
    const records = await rowsByKey<Pick<RecordRow, "tenant_id" | "id" | "body" | "created_at" | "updated_at">>(
      db,
      collection.table,
      ["tenant_id", "id", "body", "created_at", "updated_at"],
      waiting.map((m) => [m.tenant_id, m.record_id ?? ""]),
    );
    for (const message of waiting) {
      const record = records.get(keyOf(message.tenant_id, message.record_id ?? ""));
      if (record === undefined)
        throw new Error(`message ${message.id} announces ${collection.name} ${message.record_id}, which is not stored`);
      message.payload = messagePayload(type, message.created_at, toApiJson(collection, record));
    }
  }
}

interface Loaded {
  messages: Map<string, MessageRow>;
  endpoints: Map<string, EndpointRow>;
}

/** The messages and endpoints of the deliveries taken: a few queries per round, not two per delivery. */
async function load(db: Kysely<Schema>, taken: readonly Taken[]): Promise<Loaded> {
  return db.transaction().execute(async (trx) => {
    await planForNow(trx);
    return loadIn(trx, taken);
  });
}

async function loadIn(db: Kysely<Schema>, taken: readonly Taken[]): Promise<Loaded> {
  const messages = await rowsByKey<MessageRow>(
    db,
    "webhook_messages",
    ["tenant_id", "id", "type", "created_at", "record_id", "payload"],
    taken.map((t) => [t.tenant_id, t.message_id]),
  );
  await withPayloads(db, [...messages.values()]);
  const endpoints = await rowsByKey<EndpointRow>(
    db,
    "webhook_endpoints",
    ["tenant_id", "id", "url", "secret", "previous_secret", "previous_secret_until"],
    taken.map((t) => [t.tenant_id, t.endpoint_id]),
  );
  return { messages, endpoints };
}

interface Outcome {
  taken: Taken;
  eventType: string;
  result: SendResult;
  /** No later attempt could do better (the endpoint or the message is gone): the delivery fails now. */
  final: boolean;
  /** When the attempt ended. */
  at: number;
}

/** Sends one delivery taken in `round`; resolves with what came of it. */
async function send(taken: Taken, round: Loaded, options: DeliveryOptions): Promise<Outcome> {
  const message = round.messages.get(keyOf(taken.tenant_id, taken.message_id));
  const endpoint = round.endpoints.get(keyOf(taken.tenant_id, taken.endpoint_id));
  if (message?.payload == null) {
    // Not kept any more (nothing should prune what a delivery names: see pruneMessages): it
    // fails and is logged, rather than being taken again every lease for ever.
    const result = { error: `its message ${taken.message_id} is no longer kept`, durationMs: 0 };
    return { taken, eventType: message?.type ?? "unknown", result, final: true, at: options.clock() };
  }
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
  return { taken, eventType: message.type, result, final: endpoint === undefined, at: options.clock() };
}

/** Outcomes recorded in one transaction at most. */
const MAX_GROUP = 500;

const ATTEMPT_COLUMNS = [
  "tenant_id",
  "id",
  "delivery_id",
  "endpoint_id",
  "message_id",
  "event_type",
  "attempted_at",
  "status_code",
  "duration_ms",
  "error",
  "next_attempt_at",
];

/** What an attempt means for its delivery. */
interface Settled {
  taken: Taken;
  status: "succeeded" | "failed" | "pending";
  next: number | null;
  at: number;
}

/**
 * Sets each delivery's status, next attempt and update time, one statement per run of rows:
 * a statement per delivery cost the loop a round trip each. PostgreSQL first locks the rows in
 * primary-key order, the order a concurrent delete of an endpoint's deliveries locks them in:
 * the two wait for each other instead of deadlocking.
 */
async function settle(trx: Transaction<Schema>, settled: readonly Settled[]): Promise<void> {
  const postgres = engineOf(trx) === "postgres";
  for (const part of fixedChunks(settled)) {
    const keys = part.map(({ taken: t }) => [t.tenant_id, t.endpoint_id, t.id]);
    if (postgres) {
      await overRows(
        trx,
        "settle-lock",
        keys,
        (slots) =>
          sql`select 1 from webhook_deliveries where ${keysIn(["tenant_id", "endpoint_id", "id"], slots)} order by tenant_id, endpoint_id, id for update`,
      );
    }
    const outcomes = part.map(({ taken: t, status, next, at }) => [t.tenant_id, t.endpoint_id, t.id, status, next, at, t.attempts]);
    await overRows(trx, "settle", outcomes, (slots) => {
      // Typed values: PostgreSQL would read untyped ones as text.
      const rows = slots.map(
        ([tenant, endpoint, id, status, next, at, attempts]) =>
          sql`(cast(${tenant} as integer), cast(${endpoint} as text), cast(${id} as text), cast(${status} as text), cast(${next} as bigint), cast(${at} as bigint), cast(${attempts} as integer))`,
      );
      // Only a delivery still as this attempt took it (its count of attempts unchanged) takes the
      // outcome. One replayed meanwhile (count 0) keeps its fresh schedule and only loses this
      // lease, so that it goes at once; one taken again after this lease ran out is left alone.
      // One paused meanwhile (its endpoint disabled) stays paused with its retry's time, so that
      // enabling the endpoint sends it at once with the others that waited.
      return sql`update webhook_deliveries
        set status = case when webhook_deliveries.attempts = v.column7
            then (case when webhook_deliveries.status = 'paused' and v.column4 = 'pending' then 'paused' else v.column4 end)
            else webhook_deliveries.status end,
          next_attempt_at = case when webhook_deliveries.attempts = v.column7 then v.column5 else webhook_deliveries.next_attempt_at end,
          updated_at = case when webhook_deliveries.attempts = v.column7 then v.column6 else webhook_deliveries.updated_at end,
          lease_until = null
        from (values ${sql.join(rows)}) as v
        where webhook_deliveries.tenant_id = v.column1 and webhook_deliveries.endpoint_id = v.column2 and webhook_deliveries.id = v.column3
          and (webhook_deliveries.attempts = v.column7 or webhook_deliveries.attempts = 0)`;
    });
  }
}

/**
 * Records attempts and what each means for its delivery (and, on 410, its endpoint), all in
 * one transaction: attempts that end together share one commit.
 */
async function record(trx: Transaction<Schema>, outcomes: readonly Outcome[], random: () => number): Promise<void> {
  await planForNow(trx);
  const attempts: unknown[][] = [];
  const settled: Settled[] = [];
  const gone: Outcome[] = [];
  // settle locks the deliveries in key order; here any order will do.
  for (const outcome of outcomes) {
    const { taken, eventType, result, final, at } = outcome;
    const succeeded = result.status !== undefined && result.status >= 200 && result.status < 300;
    const next = succeeded || final || result.status === 410 ? undefined : nextAttemptAt(taken.attempts, at, result, random);
    settled.push({ taken, status: succeeded ? "succeeded" : next === undefined ? "failed" : "pending", next: next ?? null, at });
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
      result.error ?? (succeeded ? null : `HTTP ${result.status}`),
      next ?? null,
    ]);
    if (result.status === 410) gone.push(outcome);
  }
  await settle(trx, settled);
  await insertMany(trx, "webhook_attempts", ATTEMPT_COLUMNS, attempts);
  // Its other pending deliveries are paused with it (an admin may enable it again).
  for (const { taken, at } of gone) {
    await setEndpointDisabledIn(trx, taken.tenant_id, taken.endpoint_id, "the endpoint answered 410 Gone", at);
  }
}

/**
 * Group commit: an outcome waits up to `delayMs` for the ones that end after it (or until
 * `MAX_GROUP` have queued), and they are recorded in one transaction, so a busy loop commits
 * a few times per round, not once per attempt. An outcome lost with its process before it is
 * recorded leaves its delivery's lease to expire: it is sent again (at least once).
 */
class Recorder {
  private queue: { outcome: Outcome; done: (error?: unknown) => void }[] = [];
  private timer: NodeJS.Timeout | undefined;
  private writing = false;

  constructor(
    private readonly db: Kysely<Schema>,
    private readonly random: () => number,
    private readonly delayMs: number,
  ) {}

  /** Resolves once the outcome is committed. */
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
      try {
        // Lost with the machine, an outcome only means the delivery is sent again.
        await relaxedTransaction(this.db, (trx: Transaction<Schema>) =>
          record(
            trx,
            batch.map((b) => b.outcome),
            this.random,
          ),
        );
        for (const b of batch) b.done();
      } catch (error) {
        // Not recorded: each delivery's lease expires and it is sent again.
        for (const b of batch) b.done(error);
      }
    }
    this.writing = false;
  }
}

export class DeliveryLoop {
  private readonly options: DeliveryOptions;
  private readonly recorder: Recorder;
  private timer: NodeJS.Timeout | undefined;
  private tick: (() => void) | undefined;
  /** A wake came while a poll was under way: poll again as soon as it ends. */
  private again = false;
  private stopped = true;
  private running: Promise<unknown> = Promise.resolve();
  private readonly inFlight = new Set<Promise<void>>();
  /** Attempts under way per endpoint ("tenant endpoint"). */
  private readonly perEndpoint = new Map<string, number>();
  /** When the last round began (performance.now()), and what it found waiting longest. */
  private lastRound = { startedAt: -Infinity, oldestDue: null as number | null };

  constructor(
    private readonly db: Kysely<Schema>,
    options: Partial<DeliveryOptions> = {},
    private readonly onError: (err: unknown) => void = () => undefined,
  ) {
    this.options = { ...DEFAULT_DELIVERY_OPTIONS, ...options };
    this.recorder = new Recorder(db, this.options.random, this.options.recordDelayMs);
  }

  /**
   * Takes what is due now and starts sending it; resolves when those attempts are recorded.
   * Returns how many deliveries it took.
   */
  async runOnce(): Promise<number> {
    const { taken } = await take(this.db, this.options.clock(), this.options, this.underWay);
    await Promise.all(await this.dispatch(taken));
    return taken.length;
  }

  /** Starts one attempt per delivery taken, each tracked until it is recorded. */
  private async dispatch(taken: Taken[]): Promise<Promise<void>[]> {
    if (taken.length === 0) return [];
    const round = await load(this.db, taken);
    return taken.map((t) => {
      const endpoint = keyOf(t.tenant_id, t.endpoint_id);
      this.perEndpoint.set(endpoint, (this.perEndpoint.get(endpoint) ?? 0) + 1);
      // The endpoint is busy with an attempt until it answers (or time runs out); the process
      // is until the attempt is recorded too.
      const answered = send(t, round, this.options).finally(() => {
        const left = this.perEndpoint.get(endpoint)! - 1;
        if (left === 0) this.perEndpoint.delete(endpoint);
        else this.perEndpoint.set(endpoint, left);
        // An endpoint that had all the attempts it may have can take more: take them now, not
        // at the next interval (its backlog drains as fast as it answers).
        if (left === this.options.maxPerEndpoint - 1) this.wake();
      });
      const sending = answered.then((outcome) => this.recorder.add(outcome)).catch(this.onError);
      this.inFlight.add(sending);
      void sending.finally(() => {
        this.inFlight.delete(sending);
        // A loop that waited for room goes on at once.
        if (this.inFlight.size === this.options.maxInFlight - this.options.batchSize) this.wake();
      });
      return sending;
    });
  }

  /** How many attempts of an endpoint are under way in this process. */
  private readonly underWay = (tenantId: number, endpointId: string): number => this.perEndpoint.get(keyOf(tenantId, endpointId)) ?? 0;

  /**
   * Polls every `intervalMs`, and at once again after a full round (more is due) as long as
   * fewer than `maxInFlight` attempts are under way, unless it gives way to sync (`ingesting`).
   * Attempts run concurrently, each bounded by its timeout, so a slow endpoint holds up only
   * its own deliveries.
   */
  start(intervalMs = 500): void {
    this.stopped = false;
    const tick = () => {
      this.timer = undefined;
      this.again = false;
      let full = false;
      const room = this.inFlight.size + this.options.batchSize <= this.options.maxInFlight;
      if (room) this.lastRound.startedAt = performance.now();
      this.running = (room ? take(this.db, this.options.clock(), this.options, this.underWay) : Promise.resolve(undefined))
        .then((round) => {
          if (round === undefined) return [];
          // Endpoints all at their limit say nothing of the lag: the last that did stands.
          if (round.oldestDue !== undefined) this.lastRound.oldestDue = round.oldestDue;
          full = round.taken.length === this.options.batchSize;
          return this.dispatch(round.taken);
        })
        .catch(this.onError)
        .finally(() => {
          if (!this.stopped && this.timer === undefined) this.schedule(full || this.again ? 0 : intervalMs);
        });
    };
    this.tick = tick;
    this.schedule(0);
  }

  /** Polls now instead of at the next interval (or right after the poll under way). */
  wake(): void {
    if (this.stopped || this.tick === undefined) return;
    if (this.timer === undefined) {
      this.again = true;
      return;
    }
    clearTimeout(this.timer);
    this.schedule(0);
  }

  /** The next round in `delayMs`, or later when the loop gives way to sync. */
  private schedule(delayMs: number): void {
    this.timer = setTimeout(this.tick!, Math.max(delayMs, this.givingWayFor())).unref();
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

  /** Stops polling and waits for the attempts in flight to be recorded. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    await this.running;
    await Promise.all(this.inFlight);
  }
}
