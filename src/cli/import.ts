/**
 * `cribline import`: bulk loads an NDJSON file through the same code path as the sync API,
 * in batches of up to 1,000 records. Each batch is atomic; a bad batch stops the import and
 * names the file's line numbers, and the batches before it stay stored. A line may be as long
 * as a sync body may be (CRIBLINE_SYNC_BODY_LIMIT); lines may end in CRLF, and a UTF-8 byte
 * order mark before the first is skipped (editors on Windows write one). A line that is not UTF-8
 * is refused by its number, not stored with its bad bytes replaced. The table it loaded is left
 * analysed (storage/statistics.ts), also when it stopped at a bad batch after storing others.
 */
import { createReadStream } from "node:fs";
import type { Kysely } from "kysely";
import type { Collection } from "../collections/define.js";
import { ApiError } from "../platform/errors.js";
import { decodeUtf8 } from "../platform/json-body.js";
import type { Schema } from "../storage/schema.js";
import { analyzeTable } from "../storage/statistics.js";
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
  /** The longest line taken, in bytes: a sync body's limit. */
  maxLineBytes: number,
): Promise<SyncResult> {
  const total: SyncResult = { created: 0, updated: 0, unchanged: 0 };
  let done = 0;
  const stored = () =>
    done === 0
      ? "nothing was stored"
      : `the ${done} records before it are stored (${total.created} created, ${total.updated} updated, ${total.unchanged} unchanged)`;
  let batch: unknown[] = [];
  let lines: number[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    try {
      const result = await syncBatch(db, collection, tenantId, { data: batch });
      total.created += result.created;
      total.updated += result.updated;
      total.unchanged += result.unchanged;
    } catch (error) {
      if (!(error instanceof ApiError)) throw error;
      throw new ImportError(`the batch from line ${lines[0]} was not stored; ${stored()}:\n${describe(error, lines)}`);
    }
    done += batch.length;
    if (done % 10_000 < batch.length) progress(`${collection.name}: ${done} records imported`);
    batch = [];
    lines = [];
  };
  try {
    for await (const { number, text } of ndjsonLines(file, maxLineBytes, stored)) {
      if (text.trim() === "") continue;
      try {
        batch.push(JSON.parse(text));
      } catch {
        // Like any bad line, it stops the import with its batch unstored.
        throw new ImportError(`line ${number} is not valid JSON; ${stored()}`);
      }
      lines.push(number);
      if (batch.length === MAX_BATCH) await flush();
    }
    await flush();
  } catch (error) {
    // What was stored is analysed all the same; the error that stopped the import is the one told.
    if (done > 0) await analyzeTable(db, collection.table as "withdrawals").catch(() => undefined);
    throw error;
  }
  if (done > 0) await analyzeTable(db, collection.table as "withdrawals");
  return total;
}

const NEWLINE = 0x0a;

/**
 * The file's lines, numbered from 1, without their line ends; refuses a line longer than
 * `maxBytes` as soon as it is, instead of holding all of it (a line-reader holds a whole
 * line, however long, until V8 runs out of memory).
 */
async function* ndjsonLines(file: string, maxBytes: number, stored: () => string): AsyncGenerator<{ number: number; text: string }> {
  let number = 0;
  let parts: Buffer[] = [];
  let bytes = 0;
  const line = () => {
    number += 1;
    let text = decodeUtf8(Buffer.concat(parts, bytes));
    if (text === undefined) throw new ImportError(`line ${number} is not valid UTF-8 (save the file as UTF-8); ${stored()}`);
    if (number === 1 && text.startsWith("\uFEFF")) text = text.slice(1);
    if (text.endsWith("\r")) text = text.slice(0, -1);
    parts = [];
    bytes = 0;
    return { number, text };
  };
  const take = (part: Buffer) => {
    bytes += part.length;
    if (bytes > maxBytes) {
      throw new ImportError(`line ${number + 1} is longer than ${maxBytes} bytes (CRIBLINE_SYNC_BODY_LIMIT); ${stored()}`);
    }
    parts.push(part);
  };
  for await (const chunk of createReadStream(file) as AsyncIterable<Buffer>) {
    let start = 0;
    for (let end = chunk.indexOf(NEWLINE); end !== -1; end = chunk.indexOf(NEWLINE, start)) {
      take(chunk.subarray(start, end));
      yield line();
      start = end + 1;
    }
    take(chunk.subarray(start));
  }
  if (bytes > 0) yield line();
}
