/**
 * An export's resume state, kept beside its file in `<file>.export-state.json` after every
 * page: a line of JSON a page, appended by one small write, cheap beside the page's request
 * (writing a whole file and renaming it over the old one is not). A kill mid-write leaves at
 * most a last line cut short, which is no JSON and is passed over: the line before it holds.
 * The file is rewritten to its last state when a run starts and past COMPACT_AT, so it stays small.
 */
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, renameSync, writeFileSync, writeSync } from "node:fs";

export interface ExportState {
  list: string;
  format: string;
  filters: Record<string, string>;
  /** CSV: the file starts with a UTF-8 byte-order mark. */
  bom?: boolean;
  /** The next page's cursor; null before the first page and after the last. */
  cursor: string | null;
  /** The file's length after the last page written: what a resumed run keeps. */
  bytes: number;
  records: number;
  pages: number;
  done: boolean;
}

const COMPACT_AT = 1 << 20;

export const statePathOf = (out: string): string => `${out}.export-state.json`;

function isState(value: unknown): value is ExportState {
  const state = value as ExportState;
  return (
    typeof value === "object" &&
    value !== null &&
    typeof state.list === "string" &&
    typeof state.bytes === "number" &&
    typeof state.records === "number" &&
    typeof state.pages === "number" &&
    (state.cursor === null || typeof state.cursor === "string")
  );
}

/** The last whole state kept at `path`; undefined when there is none. */
export function readState(path: string): ExportState | undefined {
  if (!existsSync(path)) return undefined;
  for (const line of readFileSync(path, "utf8").split("\n").reverse()) {
    try {
      const state: unknown = JSON.parse(line);
      if (isState(state)) return state;
    } catch {
      // A line a kill cut short: the one before it holds.
    }
  }
  return undefined;
}

/** The state file of one run: a line appended after every page. */
export class StateLog {
  private fd: number;
  private size = 0;

  /** Starts the file afresh with `state` alone (written whole, then renamed over the old one). */
  constructor(
    private readonly path: string,
    state: ExportState,
  ) {
    this.fd = this.rewrite(state);
  }

  /** Keeps `state`: one write of one line. */
  keep(state: ExportState): void {
    const line = `${JSON.stringify(state)}\n`;
    if (this.size + line.length > COMPACT_AT) {
      closeSync(this.fd);
      this.fd = this.rewrite(state);
    } else this.size += writeSync(this.fd, line);
  }

  /** Keeps `state` on disk (fsync), for the end of a run. */
  keepDurably(state: ExportState): void {
    this.keep(state);
    fsyncSync(this.fd);
  }

  close(): void {
    closeSync(this.fd);
  }

  private rewrite(state: ExportState): number {
    const line = `${JSON.stringify(state)}\n`;
    writeFileSync(`${this.path}.tmp`, line);
    renameSync(`${this.path}.tmp`, this.path);
    this.size = Buffer.byteLength(line);
    return openSync(this.path, "a");
  }
}
