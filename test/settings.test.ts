/**
 * CRIBLINE_* variables that are no setting (README: "Running it"): every command that reads
 * the settings warns about each, naming the known variable it is close to if one is, and goes on.
 */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { OTHER_PROGRAMS_SETTINGS, SERVER_SETTINGS } from "../src/platform/setting-names.js";
import { useCliWorkspace } from "./support/cli.js";

const workspace = useCliWorkspace();

const README = readFileSync(new URL("../README.md", import.meta.url), "utf8");

const warning = (name: string, closest: string) =>
  `cribline: warning: ${name} is not a cribline setting and is ignored; did you mean ${closest}?`;

describe("an unknown CRIBLINE_ variable", () => {
  it("is warned about by a command, naming the closest setting, and the command goes on", async () => {
    const ws = workspace();
    const result = await ws.run(["tenants", "create", "acme"], { CRIBLINE_METRIC_PORT: "9464" });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr.trimEnd().split("\n")).toEqual([warning("CRIBLINE_METRIC_PORT", "CRIBLINE_METRICS_PORT")]);
  });

  it("names the known variable within a few letters of it, the other programs' too, and none when none is", async () => {
    const result = await workspace().run(["keys", "list"], { CRIBLINE_API_KYE: "x", CRIBLINE_FOO: "1", CRIBLINE_DEM: "false" });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr.trimEnd().split("\n")).toEqual([
      warning("CRIBLINE_API_KYE", "CRIBLINE_API_KEY"),
      warning("CRIBLINE_DEM", "CRIBLINE_DEMO"),
      "cribline: warning: CRIBLINE_FOO is not a cribline setting and is ignored",
    ]);
  });

  it("is warned about by serve, once each, in any letter case, and serve starts", async () => {
    const server = await workspace().serve({ CRIBLINE_RATELIMIT_READ: "10", cribline_demo: "false" });
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    expect(server.stderr().trimEnd().split("\n")).toEqual([
      warning("CRIBLINE_RATELIMIT_READ", "CRIBLINE_RATE_LIMIT_READ"),
      warning("cribline_demo", "CRIBLINE_DEMO"),
    ]);
  });

  it("is not one of the variables other programs of this repository read, nor a setting", async () => {
    const others = Object.fromEntries(OTHER_PROGRAMS_SETTINGS.map((name) => [name, "x"]));
    const result = await workspace().run(["keys", "list"], { ...others, CRIBLINE_RATE_LIMIT_READ: "10", CRIBLINE_DEMO: "false" });
    expect({ code: result.code, stderr: result.stderr }).toEqual({ code: 0, stderr: "" });
  });

  it("is told apart by the README's list: its settings table is every server setting, and the others are named", () => {
    const table = README.slice(README.indexOf("| variable "), README.indexOf("\n\n", README.indexOf("| variable ")));
    const inTable = [...table.matchAll(/^\| `(CRIBLINE_[A-Z_]+)`/gm)].map((m) => m[1]);
    expect(inTable.sort()).toEqual([...SERVER_SETTINGS].sort());
    for (const name of OTHER_PROGRAMS_SETTINGS) expect(README).toContain(`\`${name}\``);
  });
});
