#!/usr/bin/env node
/**
 * `npx @cribline/client export <list> [--since T] [--until T] [--name P] [--format ndjson|csv]
 * -o FILE [--base-url URL]`: see export.ts. The API key comes from CRIBLINE_API_KEY only (a key
 * on a command line ends up in shell histories and process lists); the server from --base-url
 * or CRIBLINE_BASE_URL.
 */
import { parseArgs } from "node:util";
import v8 from "node:v8";
import { exportList } from "./export.js";
import { LIST_NAMES, type ListName } from "./index.js";

const LISTS = LIST_NAMES;
const USAGE =
  "usage: cribline-client export <list> -o FILE [--format ndjson|csv] [--since T] [--until T] [--name PREFIX] [--base-url URL]\n" +
  "  the API key comes from CRIBLINE_API_KEY; the server from --base-url or CRIBLINE_BASE_URL";

function fail(message: string): never {
  process.stderr.write(`cribline-client: ${message}\n${USAGE}\n`);
  process.exit(2);
}

async function main(argv: string[]): Promise<void> {
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
        since: { type: "string" },
        until: { type: "string" },
        name: { type: "string" },
        "base-url": { type: "string" },
        limit: { type: "string" },
      },
    });
  } catch (error) {
    fail(error instanceof Error ? error.message : String(error));
  }
  const [command, list, ...rest] = parsed.positionals;
  if (command !== "export" || list === undefined || rest.length > 0) fail("give one command, export, and one list");
  if (!LISTS.includes(list as ListName)) fail(`no list "${list}"; the lists are ${LISTS.join(", ")}`);
  const { out, format, since, until, name, limit } = parsed.values;
  if (out === undefined) fail("give the file to write with -o FILE");
  if (format !== "ndjson" && format !== "csv") fail(`--format is ndjson or csv, got "${format}"`);
  const apiKey = process.env.CRIBLINE_API_KEY;
  if (apiKey === undefined || apiKey === "") fail("set CRIBLINE_API_KEY to a key with the read scope");
  const baseUrl = parsed.values["base-url"] ?? process.env.CRIBLINE_BASE_URL ?? "http://localhost:3000";
  const filters: Record<string, string> = {};
  if (since !== undefined) filters.createdSince = since;
  if (until !== undefined) filters.createdUntil = until;
  if (name !== undefined) filters.name = name;
  const terminal = process.stderr.isTTY === true;
  const summary = await exportList({
    list: list as ListName,
    baseUrl,
    apiKey,
    format,
    out,
    filters,
    limit: limit === undefined ? undefined : Number(limit),
    progress: terminal ? (line) => process.stderr.write(`\r\u001b[2K${line}`) : undefined,
  });
  if (terminal) process.stderr.write("\n");
  process.stderr.write(
    summary.alreadyDone
      ? `${out} is complete already: ${summary.records} records in ${summary.pages} pages\n`
      : `${summary.resumed ? "resumed and finished" : "exported"} ${list} to ${out}: ${summary.records} records in ${summary.pages} pages, ${summary.seconds.toFixed(1)} s\n`,
  );
}

main(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`cribline-client: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
});
