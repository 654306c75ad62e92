/**
 * Sync of any number of records, in batches of the API's 1,000. The server applies each batch
 * whole or not at all, but a later batch can fail after earlier ones were stored: the caller is
 * then told exactly which (SyncError), with every record at fault by its index in the caller's
 * own array. What the client can see across the whole input (an id twice, an id of the wrong
 * shape, a record that is no object) is refused before any batch is sent.
 */
import { CriblineError, type Problem } from "./errors.js";

export const MAX_BATCH = 1000;
/**
 * Mirrors the API's id rule (ID_PATTERN of the server's collections/fields.ts): a copy, as the
 * client depends on no server code; the server checks it again.
 */
const ID = /^[A-Za-z0-9._:-]{1,64}$/;

export interface SyncCounts {
  created: number;
  updated: number;
  unchanged: number;
}
/** A batch sent: the index of its first record in the caller's array, how many it held, and what it did. */
export interface SyncBatch extends SyncCounts {
  first: number;
  count: number;
}
export interface SyncResult extends SyncCounts {
  batches: SyncBatch[];
}
/** A record at fault: its index in the caller's array, the field, and why. */
export type RecordError = NonNullable<Problem["errors"]>[number];

/** A sync that stopped: what was stored before, the batch that failed, and the records at fault. */
export class SyncError extends CriblineError {
  override name = "SyncError";
  constructor(
    failure: { status: number; code: CriblineError["code"]; detail: string; param?: string; requestId?: string; problem?: Problem },
    /** The batches stored before the failure (all of their records), and their totals. */
    readonly applied: SyncResult,
    /**
     * The batch that failed (0-based `batch`, `first` record, `count`); nothing of it is stored,
     * unless `status` is 0 (no answer): then it may be. Undefined when nothing was sent.
     */
    readonly failed: { batch: number; first: number; count: number } | undefined,
    /** Every record at fault, by its index in the caller's array. */
    readonly errors: RecordError[],
  ) {
    super(failure.status, failure.code, failure.detail, failure.param, failure.requestId, failure.problem);
  }
}

/** Sends one batch; the client's request, retried as it retries. */
export type SendBatch = (records: readonly unknown[]) => Promise<SyncCounts>;

export async function syncInBatches(records: readonly unknown[], send: SendBatch): Promise<SyncResult> {
  if (!Array.isArray(records)) throw new TypeError("sync takes an array of records");
  const result: SyncResult = { created: 0, updated: 0, unchanged: 0, batches: [] };
  const refused = checkRecords(records);
  if (refused.length > 0) {
    // 400, as the server would answer: status 0 means "no answer", which a caller may retry.
    const detail = `${refused.length} record(s) refused by the client before sending; nothing was sent`;
    const problem: Problem = {
      type: "about:blank",
      status: 400,
      title: "Invalid records",
      detail,
      code: "invalid_records",
      errors: refused,
    };
    throw new SyncError({ status: 400, code: "invalid_records", detail, problem }, result, undefined, refused);
  }
  for (let at = 0; at < records.length; at += MAX_BATCH) {
    const batch = records.slice(at, at + MAX_BATCH);
    let counts: SyncCounts;
    try {
      counts = await send(batch);
    } catch (error) {
      if (!(error instanceof CriblineError)) throw error;
      throw stopped(error, result, { batch: at / MAX_BATCH, first: at, count: batch.length }, records);
    }
    result.batches.push({ first: at, count: batch.length, ...counts });
    result.created += counts.created;
    result.updated += counts.updated;
    result.unchanged += counts.unchanged;
  }
  return result;
}

/** What the client can tell of the whole input before sending: the server sees one batch at a time. */
function checkRecords(records: readonly unknown[]): RecordError[] {
  const errors: RecordError[] = [];
  const firstIndex = new Map<string, number>();
  records.forEach((record, index) => {
    if (typeof record !== "object" || record === null || Array.isArray(record)) {
      errors.push({ index, field: "(record)", message: "each record must be an object" });
      return;
    }
    const id = (record as { id?: unknown }).id;
    if (typeof id !== "string" || !ID.test(id)) {
      errors.push({ index, field: "id", message: "must be 1 to 64 characters from A-Z a-z 0-9 . _ : -" });
      return;
    }
    const earlier = firstIndex.get(id);
    if (earlier === undefined) firstIndex.set(id, index);
    else errors.push({ index, field: "id", message: `id "${id}" appears already at index ${earlier}; send each record once` });
  });
  return errors;
}

const range = (first: number, count: number) => `records ${first}..${first + count - 1}`;

/** The failure of one batch, said of the whole sync: indexes moved into the caller's array. */
function stopped(
  error: CriblineError,
  applied: SyncResult,
  failed: NonNullable<SyncError["failed"]>,
  records: readonly unknown[],
): SyncError {
  const errors = (error.problem?.errors ?? []).map((e) => ({ ...e, index: e.index + failed.first }));
  // A conflict names ids; the caller wants the records.
  const conflicting = new Set(error.problem?.ids ?? []);
  if (conflicting.size > 0) {
    records.slice(failed.first, failed.first + failed.count).forEach((record, i) => {
      if (conflicting.has((record as { id: string }).id)) {
        errors.push({ index: failed.first + i, field: "id", message: "stored already with other content (transactions never change)" });
      }
    });
  }
  const outcome = error.status === 0 ? "failed, and may or may not be stored (sending it again is safe)" : "refused, nothing of it stored";
  const before =
    applied.batches.length === 0
      ? "nothing stored before it"
      : `stored before it: ${applied.batches.map((b) => `batch ${b.first / MAX_BATCH} (${range(b.first, b.count)})`).join(", ")}`;
  const rest = records.length - failed.first - failed.count;
  const detail =
    `batch ${failed.batch} (${range(failed.first, failed.count)}) ${outcome}: ` +
    // The server's words are of its one batch: "nothing was applied" would read as the whole sync.
    `${error.detail.replace(/;\s*nothing (of the batch )?was applied$/, "")}; ${before}` +
    (rest > 0 ? `; not sent: ${range(failed.first + failed.count, rest)}` : "");
  const problem = error.problem === undefined ? undefined : { ...error.problem, detail, ...(errors.length > 0 ? { errors } : {}) };
  return new SyncError({ ...error, detail, problem }, applied, failed, errors);
}
