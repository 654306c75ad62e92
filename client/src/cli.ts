#!/usr/bin/env node
/**
 * `npx cribline-client export <list> [--since T] [--until T] [--name P] [--format ndjson|csv] [--bom]
 * -o FILE [--base-url URL]`, and `export usage --group-by F --since T --until T [--interval I]
 * [--time-zone Z] [--cost-center ID ...]`: see export.ts. The API key comes from CRIBLINE_API_KEY only (a key
 * on a command line ends up in shell histories and process lists); the server from --base-url
 * or CRIBLINE_BASE_URL.
 */
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";
import v8 from "node:v8";
import { ExportError, exportList, type Exported } from "./export.js";
import { CriblineError, LIST_NAMES } from "./index.js";

const LISTS: readonly Exported[] = [...LIST_NAMES, "usage"];
/** The usage report's id filters, by flag. */
const ID_FLAGS = {
  "cost-center": "costCenterId",
  employee: "employeeId",
  product: "productId",
  sector: "sectorId",
  device: "deviceId",
} as const;
const USAGE =
  "usage: cribline-client export <list> -o FILE [--format ndjson|csv] [--bom] [--since T] [--until T] [--name PREFIX] [--base-url URL]\n" +
  "       cribline-client export usage -o FILE --group-by F[,F] --since T --until T [--interval I] [--time-zone Z] [--cost-center ID] ...\n" +
  "       cribline-client --help | --version\n" +
  "  the API key comes from CRIBLINE_API_KEY; the server from --base-url or CRIBLINE_BASE_URL";
const HELP =
  `${USAGE}\n\n` +
  "Writes a list of cribline (or a time window of it, or a name prefix) to FILE, page by page;\n" +
  "run the same command again after an interruption and it goes on where it stopped.\n" +
  `  <list>             ${LISTS.join(", ")}\n` +
  "  -o, --out FILE     the file to write (never one the command did not write)\n" +
  "  --format F         ndjson (a record a line, the default) or csv (RFC 4180)\n" +
  "  --bom              start a CSV file with a UTF-8 byte-order mark (Excel needs it to read accents)\n" +
  "  --since T          records whose event is at or after T (RFC 3339 with time and zone)\n" +
  "  --until T          records whose event is at or before T\n" +
  "  --name PREFIX      records whose name starts with PREFIX (case-insensitive)\n" +
  "  --limit N          records per request, 1 to 100 (100)\n" +
  "  usage only (a usage report, a row per period and group; --since and --until required):\n" +
  "  --group-by F[,F]   costCenterId, employeeId, productId, sectorId or deviceId, or two of them\n" +
  "  --interval I       day, week, month or total (total)\n" +
  "  --time-zone Z      an IANA time zone (the tenant's)\n" +
  "  --cost-center ID, --employee ID, --product ID, --sector ID, --device ID   only records with that id\n" +
  "  --base-url URL     the server (CRIBLINE_BASE_URL, or http://localhost:3000)\n" +
  "  -h, --help         this text\n" +
  "  --version          the version of @cribline/client\n";

function fail(message: string): never {
  process.stderr.write(`cribline-client: ${message}\n${USAGE}\n`);
  process.exit(2);
}

/** Whether argv asks for `flag` (before a `--` that ends the options). */
function asks(argv: string[], ...flags: string[]): boolean {
  const end = argv.indexOf("--");
  return (end === -1 ? argv : argv.slice(0, end)).some((arg) => flags.includes(arg));
}

async function main(argv: string[]): Promise<void> {
  if (asks(argv, "--help", "-h")) {
    process.stdout.write(HELP);
    return;
  }
  if (asks(argv, "--version")) {
    // client/package.json, beside src/ and dist/ alike.
    const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
    process.stdout.write(`${version}\n`);
    return;
  }
  // A long export makes garbage page after page; V8 otherwise lets the heap grow for speed.
  v8.setFlagsFromString("--optimize-for-size");
  if (argv.some((arg) => arg === "--key" || arg.startsWith("--key=") || arg === "--api-key" || arg.startsWith("--api-key="))) {
    fail("the API key is read from CRIBLINE_API_KEY, never from the command line");
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        out: { type: "string", short: "o" },
        format: { type: "string", default: "ndjson" },
        bom: { type: "boolean", default: false },
        since: { type: "string" },
        until: { type: "string" },
        name: { type: "string" },
        "base-url": { type: "string" },
        limit: { type: "string" },
        "group-by": { type: "string" },
        interval: { type: "string" },
        "time-zone": { type: "string" },
        ...Object.fromEntries(Object.keys(ID_FLAGS).map((flag) => [flag, { type: "string" as const }])),
      },
    });
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
  const [command, list, ...rest] = parsed.positionals;
  if (command !== "export" || list === undefined || rest.length > 0) fail("give one command, export, and one list");
  if (!LISTS.includes(list as Exported)) fail(`no list "${list}"; the lists are ${LISTS.join(", ")}`);
  const values = parsed.values as Record<string, string | boolean | undefined>;
  const reportFlags = ["group-by", "interval", "time-zone", ...Object.keys(ID_FLAGS)].filter((flag) => values[flag] !== undefined);
  if (list !== "usage" && reportFlags.length > 0) fail(`--${reportFlags[0]} is for export usage`);
  if (list === "usage" && values["group-by"] === undefined) fail("give what a usage row is with --group-by, such as costCenterId");
  if (list === "usage" && values.name !== undefined)
    fail("--name is for the lists; a usage report takes --cost-center, --employee, --product, --sector or --device");
  const { out, format, bom, since, until, name, limit } = parsed.values;
  if (out === undefined) fail("give the file to write with -o FILE");
  if (format !== "ndjson" && format !== "csv") fail(`--format is ndjson or csv, got "${format}"`);
  if (bom && format !== "csv") fail("--bom is for --format csv");
  if (limit !== undefined && !/^\d+$/.test(limit)) fail(`--limit is a number of records, 1 to 100, got "${limit}"`);
  const apiKey = process.env.CRIBLINE_API_KEY;
  if (apiKey === undefined || apiKey === "") fail("set CRIBLINE_API_KEY to a key with the read scope");
  const baseUrl = parsed.values["base-url"] ?? process.env.CRIBLINE_BASE_URL ?? "http://localhost:3000";
  const filters: Record<string, string> = {};
  if (since !== undefined) filters.createdSince = since;
  if (until !== undefined) filters.createdUntil = until;
  if (name !== undefined) filters.name = name;
  const reportParams: Record<string, string> = { "group-by": "groupBy", interval: "interval", "time-zone": "timeZone", ...ID_FLAGS };
  for (const [flag, param] of Object.entries(reportParams)) if (typeof values[flag] === "string") filters[param] = values[flag];
  const terminal = process.stderr.isTTY === true;
  const summary = await exportList({
    list: list as Exported,
    baseUrl,
    apiKey,
    format,
    bom,
    out,
    filters,
    limit: limit === undefined ? undefined : Number(limit),
    progress: terminal ? (line) => process.stderr.write(`\r\u001b[2K${line}`) : undefined,
  });
  if (terminal) process.stderr.write("\n");
  process.stderr.write(
    summary.alreadyDone
      ? `${out} is complete already: ${summary.records} records in ${summary.pages} pages\n`
      : `${summary.resumedAfter === undefined ? "exported" : `resumed after ${summary.resumedAfter} records and finished`} ${list} to ${out}: ${summary.records} records in ${summary.pages} pages, ${summary.seconds.toFixed(1)} s\n`,
  );
}

/** The flag that sets each query parameter. */
const FLAG_OF: Record<string, string> = {
  createdSince: "--since",
  createdUntil: "--until",
  name: "--name",
  limit: "--limit",
  groupBy: "--group-by",
  interval: "--interval",
  timeZone: "--time-zone",
  ...Object.fromEntries(Object.entries(ID_FLAGS).map(([flag, param]) => [param, `--${flag}`])),
};

/**
 * A failure in the command line's words: the parameter the problem names (`param`) said as its
 * flag where the detail names it, quoted or as its first word. Only that one: "name" or "limit"
 * elsewhere is prose. The window's bounds are named together, so its detail gets both flags.
 */
function told(error: unknown): string {
  if (error instanceof ExportError) return error.advice === undefined ? told(error.cause) : `${told(error.cause)}\n${error.advice}`;
  if (!(error instanceof CriblineError)) return error instanceof Error ? error.message : String(error);
  const flag = error.param !== undefined && Object.hasOwn(FLAG_OF, error.param) ? FLAG_OF[error.param] : undefined;
  if (error.param === undefined || flag === undefined) return error.message;
  // What follows "; got" is the value as the user typed it: left alone.
  const at = error.detail.indexOf("; got ");
  const [said, got] = at === -1 ? [error.detail, ""] : [error.detail.slice(0, at), error.detail.slice(at)];
  let detail = said.replace(new RegExp(`^${error.param}\\b`), flag).replaceAll(`"${error.param}"`, `"${flag}"`);
  if (error.code === "invalid_time_window") detail = detail.replace(/\bcreatedUntil\b/, "--until");
  return new CriblineError(error.status, error.code, detail + got, flag, error.requestId).message;
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`cribline-client: ${told(error)}\n`);
  process.exit(1);
});
