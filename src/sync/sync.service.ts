/**
 * A sync batch from validated input to stored records, shared by the HTTP API and `import`.
 * A batch is one transaction: its records, and the events announcing them, so an acknowledged
 * change is never without its event and a refused batch announces nothing.
 */
import type { Kysely } from "kysely";
import type { Collection } from "../collections/define.js";
import { toStoredContent, type StoredContent } from "../collections/record.js";
import { ApiError } from "../platform/errors.js";
import type { Schema } from "../storage/schema.js";
import { recordEvents } from "../webhooks/outbox.repository.js";
import { writeBatchIn, type BatchOutcome } from "./sync.repository.js";
import { validateBatch } from "./sync.validate.js";
import { countSyncApplied, countSyncRefused } from "../metrics/metrics.js";

export interface SyncResult {
  created: number;
  updated: number;
  unchanged: number;
}

export interface WrittenBatch extends BatchOutcome {
  /** Webhook deliveries the batch queued. */
  deliveries: number;
}

/** Writes a batch and its announcements atomically and durably; on a conflict, nothing. */
export async function writeBatch(
  db: Kysely<Schema>,
  collection: Collection,
  tenantId: number,
  contents: StoredContent[],
  clock: () => number = Date.now,
): Promise<WrittenBatch> {
  return db.transaction().execute(async (trx) => {
    const outcome = await writeBatchIn(trx, collection, tenantId, contents, clock);
    if (outcome.conflicts.length > 0) return { ...outcome, deliveries: 0 };
    return { ...outcome, deliveries: await recordEvents(trx, collection, tenantId, outcome.changes, outcome.at) };
  });
}

export async function syncBatch(
  db: Kysely<Schema>,
  collection: Collection,
  tenantId: number,
  body: unknown,
  clock: () => number = Date.now,
  /** Called once the batch is committed, when it queued webhook deliveries. */
  deliveriesQueued: () => void = () => undefined,
): Promise<SyncResult> {
  let records;
  try {
    records = validateBatch(collection, body);
  } catch (error) {
    const data = (body as { data?: unknown } | null)?.data;
    countSyncRefused(collection.name, Array.isArray(data) ? data.length : 0);
    throw error;
  }
  const outcome = await writeBatch(
    db,
    collection,
    tenantId,
    records.map((r) => toStoredContent(collection, r)),
    clock,
  );
  if (outcome.conflicts.length > 0) {
    countSyncRefused(collection.name, records.length);
    throw new ApiError(
      "conflict",
      `${outcome.conflicts.length} ${collection.name} already stored with other content (transactions never change); nothing of the batch was applied`,
      { ids: outcome.conflicts },
    );
  }
  if (outcome.deliveries > 0) deliveriesQueued();
  countSyncApplied(collection.name, outcome.created.length, outcome.updated.length, outcome.unchanged);
  return { created: outcome.created.length, updated: outcome.updated.length, unchanged: outcome.unchanged };
}
