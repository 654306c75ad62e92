/**
 * `cribline import`: bulk loads an NDJSON file through the same code path as the sync API,
 * in batches of up to 1,000 records. Each batch is atomic; a bad batch stops the import and
 * names the file's line numbers, and the batches before it stay stored.
 */
import { createReadStream } from "node:fs";
import { createInterface } from "node:readline";
import type { Kysely } from "kysely";
import type { Collection } from "../collections/define.js";
import { ApiError } from "../platform/errors.js";
import type { Schema } from "../storage/schema.js";
import { syncBatch, type SyncResult } from "../sync/sync.service.js";
import { MAX_BATCH } from "../sync/sync.validate.js";

export class ImportError extends Error {
  override name = "ImportError";
}

function describe(error: ApiError, lines: number[]): string {
  const at = (index: number) => `line ${lines[index] ?? "?"}`;
  const details = [
    ...(error.extras.errors ?? []).map((e) => `  ${at(e.index)}: ${e.field}: ${e.message}`),
    ...(error.extras.ids ?? []).map((id) => `  id ${id}`),
  ];
  return [error.detail, ...details].join("\n");
}

export async function importNdjson(
  db: Kysely<Schema>,
  collection: Collection,
  tenantId: number,
  file: string,
  progress: (line: string) => void,
): Promise<SyncResult> {
  const total: SyncResult = { created: 0, updated: 0, unchanged: 0 };
  let batch: unknown[] = [];
  let lines: number[] = [];
  let done = 0;
  const flush = async () => {
    if (batch.length === 0) return;
    try {
      const result = await syncBatch(db, collection, tenantId, { data: batch });
      total.created += result.created;
      total.updated += result.updated;
      total.unchanged += result.unchanged;
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      throw new ImportError(`records before line ${lines[0]} are stored; this batch was not:\n${describe(error, lines)}`);
    }
    done += batch.length;
    if (done % 10_000 < batch.length) progress(`${collection.name}: ${done} records imported`);
    batch = [];
    lines = [];
  };
  let lineNumber = 0;
  for await (const line of createInterface({ input: createReadStream(file), crlfDelay: Infinity })) {
    lineNumber += 1;
    if (line.trim() === "") continue;
    try {
      batch.push(JSON.parse(line));
    } catch {
      await flush();
      throw new ImportError(`line ${lineNumber} is not valid JSON; the records before it are stored`);
    }
    lines.push(lineNumber);
    if (batch.length === MAX_BATCH) await flush();
  }
  await flush();
  return total;
}
