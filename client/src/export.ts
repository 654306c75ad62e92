/**
 * `npx @cribline/client export <list> ...`: a whole list, or a window of it, to a file as NDJSON
 * or CSV, streamed page by page (never the whole list in memory). Resumable: after each page
 * the file's length and the next cursor are kept beside it, at most twice a second (`<file>.export-state.json`), and a
 * run with the same arguments cuts off whatever a killed run wrote after the state it left and
 * goes on from that cursor, so the file ends with every record once. Node.js only.
 */
import { closeSync, existsSync, ftruncateSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from "node:fs";
import { CriblineClient, ListResource, type ListName } from "./index.js";

export interface ExportOptions {
  list: ListName;
  baseUrl: string;
  apiKey: string;
  format: "ndjson" | "csv";
  out: string;
  filters: Record<string, string>;
  /** Items per request (100). */
  limit?: number;
  /** Where progress goes (a line rewritten in place on a terminal) and the summary. */
  progress?: (line: string, final: boolean) => void;
}

/** How often the state is written while pages come: each write is a file and a rename. */
const STATE_EVERY_MS = 500;
const PROGRESS_EVERY_MS = 200;

interface ExportState {
  list: string;
  format: string;
  filters: Record<string, string>;
  cursor: string | null;
  bytes: number;
  records: number;
  pages: number;
  done: boolean;
}

export interface ExportSummary {
  records: number;
  pages: number;
  seconds: number;
  resumed: boolean;
  alreadyDone: boolean;
}

/** A CSV cell (RFC 4180), with a cell that a spreadsheet would take for a formula made text. */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return "";
  let text = typeof value === "string" ? value : String(value);
  if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** The fields of the list's items, in the order the OpenAPI document gives: the CSV header. */
async function fieldsOf(baseUrl: string, list: ListName): Promise<string[]> {
  const document = (await (await fetch(`${baseUrl}/v1/openapi.json`)).json()) as {
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

export async function exportList(options: ExportOptions): Promise<ExportSummary> {
  const started = performance.now();
  const statePath = `${options.out}.export-state.json`;
  const wanted = { list: options.list, format: options.format, filters: options.filters };
  let state: ExportState | undefined;
  if (existsSync(statePath)) {
    const kept = JSON.parse(readFileSync(statePath, "utf8")) as ExportState;
    if (JSON.stringify({ list: kept.list, format: kept.format, filters: kept.filters }) !== JSON.stringify(wanted)) {
      throw new Error(
        `${options.out} holds an export of other arguments (${kept.list}, ${kept.format}, ${JSON.stringify(kept.filters)}): choose another file`,
      );
    }
    state = kept;
  } else if (existsSync(options.out)) {
    throw new Error(`${options.out} exists and is no export of this command: choose another file`);
  }
  if (state?.done === true) return { records: state.records, pages: state.pages, seconds: 0, resumed: true, alreadyDone: true };
  const client = new CriblineClient({ baseUrl: options.baseUrl, apiKey: options.apiKey });
  const resource = new ListResource(client, options.list);
  const fields = options.format === "csv" ? await fieldsOf(options.baseUrl, options.list) : [];
  const file = openSync(options.out, state === undefined ? "w" : "r+");
  const resumed = state !== undefined;
  const save = (next: ExportState): ExportState => {
    // Written whole, then renamed over the old one: a kill never leaves half a state.
    writeFileSync(`${statePath}.tmp`, JSON.stringify(next));
    renameSync(`${statePath}.tmp`, statePath);
    return next;
  };
  let savedAt = performance.now();
  let shownAt = 0;
  try {
    let position = 0;
    let current: ExportState;
    if (state === undefined) {
      if (options.format === "csv") position += writeSync(file, `${fields.map(csvCell).join(",")}\r\n`);
      current = save({ ...wanted, cursor: null, bytes: position, records: 0, pages: 0, done: false });
    } else {
      // Whatever a killed run wrote after its last whole page goes.
      ftruncateSync(file, state.bytes);
      position = state.bytes;
      current = state;
    }
    do {
      const got = await resource.page(options.filters as never, { limit: options.limit ?? 100, cursor: current.cursor });
      const text = got.data
        .map((item) =>
          options.format === "csv"
            ? `${fields.map((field) => csvCell((item as Record<string, unknown>)[field])).join(",")}\r\n`
            : `${JSON.stringify(item)}\n`,
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
      // Kept at most every STATE_EVERY_MS (and at the end): a resumed run re-reads the pages
      // written after the last state it finds, having cut them off the file first.
      if (current.done || performance.now() - savedAt >= STATE_EVERY_MS) {
        current = save(current);
        savedAt = performance.now();
      }
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
    return { records: current.records, pages: current.pages, seconds: (performance.now() - started) / 1000, resumed, alreadyDone: false };
  } finally {
    closeSync(file);
  }
}
