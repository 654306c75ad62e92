/**
 * `npx cribline-client export <list> ...`: a whole list, or a window of it, to a file as NDJSON
 * or CSV, streamed page by page (never the whole list in memory). Resumable: after every page
 * the file's length and the next cursor are kept beside it (`<file>.export-state.json`, see
 * export-state.ts), and a run with the same arguments cuts off whatever a killed run wrote
 * after the state it left and goes on from that cursor, so the file ends with every record
 * once. Node.js only.
 */
import { closeSync, existsSync, fsyncSync, ftruncateSync, openSync, rmSync, statSync, writeSync } from "node:fs";
import { readState, StateLog, statePathOf, type ExportState } from "./export-state.js";
import { csvCell, usageFields, valueAt } from "./csv.js";
import { CriblineClient, ListResource, type ListName } from "./index.js";

/** What an export reads: one of the lists, or a usage report (its parameters given as `filters`). */
export type Exported = ListName | "usage";

export interface ExportOptions {
  list: Exported;
  baseUrl: string;
  apiKey: string;
  format: "ndjson" | "csv";
  /** CSV only: start the file with a UTF-8 byte-order mark, which Excel needs to read UTF-8. */
  bom?: boolean;
  out: string;
  filters: Record<string, string>;
  /** Items per request (100). */
  limit?: number;
  /** Where progress goes (a line rewritten in place on a terminal) and the summary. */
  progress?: (line: string, final: boolean) => void;
}

const PROGRESS_EVERY_MS = 200;

export interface ExportSummary {
  records: number;
  pages: number;
  seconds: number;
  /** The records a run interrupted before had written, when this run went on from them. */
  resumedAfter: number | undefined;
  alreadyDone: boolean;
}

/** The fields of the list's items, in the order the OpenAPI document gives: the CSV header. */
async function fieldsOf(client: CriblineClient, list: ListName): Promise<string[]> {
  const document = (await client.request("GET", "/v1/openapi.json")) as {
    paths: Record<
      string,
      {
        get?: {
          responses?: Record<string, { content?: Record<string, { schema?: { properties?: { data?: { items?: { $ref?: string } } } } }> }>;
        };
      }
    >;
    components: { schemas: Record<string, { properties: Record<string, unknown> }> };
  };
  const ref = document.paths[`/v1/${list}`]?.get?.responses?.["200"]?.content?.["application/json"]?.schema?.properties?.data?.items?.$ref;
  const schema = ref === undefined ? undefined : document.components.schemas[ref.slice(ref.lastIndexOf("/") + 1)];
  if (schema === undefined) throw new Error(`the OpenAPI document does not describe /v1/${list}`);
  return Object.keys(schema.properties);
}

/** What makes two runs one export: only a run of the same arguments goes on from a state. */
function argumentsOf(of: Pick<ExportState, "list" | "format" | "filters" | "bom">) {
  // A state without `bom` comes from a run without it.
  return { list: of.list, format: of.format, filters: of.filters, bom: of.bom === true };
}

/** The state of an export of these arguments that `out` holds, if any; any other file is refused. */
function stateToResume(out: string, statePath: string, wanted: ReturnType<typeof argumentsOf>): ExportState | undefined {
  // A state without its file (deleted to start over) is no export to go on from.
  const kept = existsSync(out) ? readState(statePath) : undefined;
  if (kept === undefined) {
    if (!existsSync(out)) return undefined;
    throw new Error(
      existsSync(statePath)
        ? `${statePath} holds no state to go on from: delete ${out} and ${statePath} to start over`
        : `${out} exists and is no export of this command: choose another file`,
    );
  }
  if (JSON.stringify(argumentsOf(kept)) !== JSON.stringify(wanted)) {
    throw new Error(
      `${out} holds an export of other arguments (${kept.list}, ${kept.format}, ${JSON.stringify(kept.filters)}): ` +
        `choose another file, or delete ${out} and ${statePath} to start over`,
    );
  }
  if (!kept.done && statSync(out).size < kept.bytes) {
    throw new Error(
      `${out} is shorter than its state says (${kept.bytes} bytes), so it cannot be resumed: delete ${out} and ${statePath} to start over`,
    );
  }
  return kept;
}

export async function exportList(options: ExportOptions): Promise<ExportSummary> {
  const started = performance.now();
  const statePath = statePathOf(options.out);
  const wanted = argumentsOf({ ...options, bom: options.bom === true });
  const kept = stateToResume(options.out, statePath, wanted);
  if (kept?.done === true) return { records: kept.records, pages: kept.pages, seconds: 0, resumedAfter: undefined, alreadyDone: true };
  const client = new CriblineClient({ baseUrl: options.baseUrl, apiKey: options.apiKey });
  const list = options.list;
  const read = (cursor: string | null) => {
    const page = { limit: options.limit ?? 100, cursor };
    return list === "usage"
      ? client.usage.page(options.filters as never, page)
      : new ListResource(client, list).page(options.filters as never, page);
  };
  let fields: string[] = [];
  if (options.format === "csv") fields = list === "usage" ? usageFields(options.filters.groupBy) : await fieldsOf(client, list);
  const file = openSync(options.out, kept === undefined ? "w" : "r+");
  let log: StateLog | undefined;
  let shownAt = 0;
  let current: ExportState | undefined = kept;
  let failure: unknown;
  try {
    let position = 0;
    if (kept === undefined) {
      if (options.format === "csv") position += writeSync(file, `${wanted.bom ? "\uFEFF" : ""}${fields.map(csvCell).join(",")}\r\n`);
      current = { ...wanted, cursor: null, bytes: position, records: 0, pages: 0, done: false };
    } else {
      // Whatever a killed run wrote after its last whole page goes.
      ftruncateSync(file, kept.bytes);
      position = kept.bytes;
      current = kept;
    }
    log = new StateLog(statePath, current);
    do {
      const got: { data: unknown[]; cursor: string | null } = await read(current.cursor);
      const text = got.data
        .map((item) =>
          options.format === "csv" ? `${fields.map((field) => csvCell(valueAt(item, field))).join(",")}\r\n` : `${JSON.stringify(item)}\n`,
        )
        .join("");
      position += writeSync(file, text, position);
      current = {
        ...current,
        cursor: got.cursor,
        bytes: position,
        records: current.records + got.data.length,
        pages: current.pages + 1,
        done: got.cursor === null,
      };
      // After the page's records, so a state never counts records the file may lack.
      if (current.done) {
        fsyncSync(file);
        log.keepDurably(current);
      } else log.keep(current);
      // A progress line at most every PROGRESS_EVERY_MS: formatting numbers costs more than a page's write.
      if (options.progress !== undefined && (current.done || performance.now() - shownAt >= PROGRESS_EVERY_MS)) {
        shownAt = performance.now();
        const seconds = (shownAt - started) / 1000;
        options.progress(
          `${current.records.toLocaleString("en")} records, ${current.pages.toLocaleString("en")} pages, ` +
            `${Math.round(current.records / Math.max(seconds, 0.001)).toLocaleString("en")} records/s, ${seconds.toFixed(1)} s`,
          false,
        );
      }
    } while (current.cursor !== null);
    return {
      records: current.records,
      pages: current.pages,
      seconds: (performance.now() - started) / 1000,
      resumedAfter: kept?.records,
      alreadyDone: false,
    };
  } catch (error) {
    failure = error;
  } finally {
    log?.close();
    closeSync(file);
  }
  const records = current?.records ?? 0;
  if (records > 0) {
    const advice = `run the same command again to go on, or delete ${options.out} and ${statePath} to start over`;
    throw new ExportError(failure, `${options.out} holds the first ${records} records: ${advice}`);
  }
  // Nothing worth keeping: a corrected command (another --since, say) then starts afresh.
  rmSync(options.out, { force: true });
  rmSync(statePath, { force: true });
  throw new ExportError(failure, undefined);
}

/** A failed export: the failure (`cause`) and, when records were kept, what to do next (`advice`). */
export class ExportError extends Error {
  override name = "ExportError";
  constructor(
    override readonly cause: unknown,
    readonly advice: string | undefined,
  ) {
    super(`${cause instanceof Error ? cause.message : String(cause)}${advice === undefined ? "" : `\n${advice}`}`, { cause });
  }
}
