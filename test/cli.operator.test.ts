/**
 * The operator's command line, run as the real executable (README: "Command line"): what each
 * command says when it has done its work, `tenants list`, `tenants zone`, a revocation done twice, a backup
 * into a folder that is missing, and `--version` and `--help` of every documented command.
 */
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { lastLine, useCliWorkspace } from "./support/cli.js";
import { expectSuccess } from "./support/cli-steps.js";

const workspace = useCliWorkspace();

const README = readFileSync(new URL("../README.md", import.meta.url), "utf8");
const PACKAGE = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")) as { version: string };
const TIME = "\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}Z";

async function createKey(tenant: string): Promise<string> {
  return lastLine(expectSuccess(await workspace().run(["keys", "create", "--tenant", tenant, "--scopes", "read"])).stdout);
}

describe("keys revoke", () => {
  it("of a key revoked already changes nothing and says since when, as the API does; an unknown id is refused", async () => {
    const ws = workspace();
    expectSuccess(await ws.run(["tenants", "create", "acme"]));
    const keyId = (await createKey("acme")).slice(0, 13);
    expect(expectSuccess(await ws.run(["keys", "revoke", keyId])).stdout).toBe(`revoked ${keyId}\n`);
    const revokedAt = new RegExp(`revoked (${TIME})`).exec(expectSuccess(await ws.run(["keys", "list"])).stdout)?.[1];
    expect(revokedAt).toBeDefined();
    const again = expectSuccess(await ws.run(["keys", "revoke", keyId]));
    expect(again.stdout).toBe(`${keyId} was already revoked at ${revokedAt}\n`);
    const unknown = await ws.run(["keys", "revoke", "crib_zzzzzzzz"]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain("no key crib_zzzzzzzz");
  });
});

describe("limits set", () => {
  it("prints the limits now in force, those given and those kept", async () => {
    const ws = workspace();
    expectSuccess(await ws.run(["tenants", "create", "acme"]));
    const read = expectSuccess(await ws.run(["limits", "set", "--tenant", "acme", "--read", "50000"]));
    expect(read.stdout).toBe("acme\tread 50000\tsync 1000 (default)\tper key every 10 s\n");
    const sync = expectSuccess(await ws.run(["limits", "set", "--tenant", "acme", "--sync", "2000"]));
    expect(sync.stdout).toBe("acme\tread 50000\tsync 2000\tper key every 10 s\n");
  });
});

describe("tenants zone", () => {
  it("prints a tenant's time zone, UTC at first, sets an IANA zone and refuses anything else", async () => {
    const ws = workspace();
    expectSuccess(await ws.run(["tenants", "create", "acme"]));
    expect(expectSuccess(await ws.run(["tenants", "zone", "acme"])).stdout).toBe("acme\tUTC\n");
    expect(expectSuccess(await ws.run(["tenants", "zone", "acme", "America/St_Johns"])).stdout).toBe("acme\tAmerica/St_Johns\n");
    expect(expectSuccess(await ws.run(["tenants", "zone", "acme"])).stdout).toBe("acme\tAmerica/St_Johns\n");
    for (const [args, said] of [
      [["acme", "Mars/Olympus"], '"Mars/Olympus" is not an IANA time zone'],
      [["acme", "america/st_johns"], "is not an IANA time zone"],
      [["nobody", "UTC"], 'no tenant "nobody"'],
    ] as const) {
      const refused = await ws.run(["tenants", "zone", ...args]);
      expect(refused.code).not.toBe(0);
      expect(refused.stderr).toContain(said);
    }
    expect(expectSuccess(await ws.run(["tenants", "zone", "acme"])).stdout).toBe("acme\tAmerica/St_Johns\n");
  });
});

describe("tenants list", () => {
  it("lists every tenant by slug: when it was created, its keys and how many of them are active", async () => {
    const ws = workspace();
    expect(expectSuccess(await ws.run(["tenants", "list"])).stdout).toBe("");
    const before = Date.now();
    for (const slug of ["beta", "acme"]) expectSuccess(await ws.run(["tenants", "create", slug]));
    await createKey("acme");
    const revoked = await createKey("acme");
    expectSuccess(await ws.run(["keys", "revoke", revoked]));
    await createKey("beta");
    const lines = expectSuccess(await ws.run(["tenants", "list"]))
      .stdout.trimEnd()
      .split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toMatch(new RegExp(`^acme\\t${TIME}\\t2 keys\\t1 active$`));
    expect(lines[1]).toMatch(new RegExp(`^beta\\t${TIME}\\t1 key\\t1 active$`));
    const created = Date.parse(lines[0]!.split("\t")[1]!);
    expect(created).toBeGreaterThanOrEqual(before);
    expect(created).toBeLessThanOrEqual(Date.now());
  });
});

describe("backup", () => {
  it("into a folder that does not exist names that folder, not the database", async () => {
    const ws = workspace();
    const env = { DATABASE_URL: `sqlite:${join(ws.dir, "cribline.db")}` };
    expectSuccess(await ws.run(["tenants", "create", "acme"], env));
    const result = await ws.run(["backup", join(ws.dir, "missing", "copy.db")], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`cribline: no folder ${join(ws.dir, "missing")} to write the backup into: create it first\n`);
  });
});

/** The commands of the README's command-line block, as written there (placeholders and all). */
function documentedCommands(): string[][] {
  const section = README.slice(README.indexOf("### Command line"));
  const block = section.slice(section.indexOf("```sh"), section.indexOf("```", section.indexOf("```sh") + 5));
  return block
    .split("\n")
    .filter((line) => line.startsWith("bin/cribline "))
    .map((line) => line.replace(/#.*/, "").replace(/\[.*$/, "").trim().split(/\s+/).slice(1))
    .filter((words) => !words[0]!.startsWith("-"));
}

describe("--version and --help", () => {
  it("--version prints the version of package.json and exits 0", async () => {
    for (const flag of ["--version", "-V"]) {
      const result = await workspace().run([flag]);
      expect({ code: result.code, stdout: result.stdout, stderr: result.stderr }).toEqual({
        code: 0,
        stdout: `${PACKAGE.version}\n`,
        stderr: "",
      });
    }
  });

  it("--help shows every command, and each command of the README answers --help", async () => {
    const ws = workspace();
    const top = expectSuccess(await ws.run(["--help"]));
    expect(top.stdout).toMatch(/^Usage: cribline/);
    expect(top.stdout).toContain("--version");
    const commands = documentedCommands();
    expect(commands.map((c) => c.slice(0, 2).join(" "))).toContain("tenants list");
    for (const command of commands) {
      const help = await ws.run([...command, "--help"]);
      expect(help.code, `${command.join(" ")} --help: ${help.stderr}`).toBe(0);
      expect(help.stdout).toMatch(new RegExp(`^Usage: cribline ${command[0]}`));
      expect(top.stdout).toContain(`  ${command[0]}`);
    }
  }, 120_000);
});
