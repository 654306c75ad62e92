/**
 * The embedded database's files, through the real executable (README: "Running it" and
 * "Backups on SQLite"): they hold webhook signing secrets and the cursor secret, so the
 * database, its -wal and -shm, a backup and the folder cribline makes are its owner's alone.
 * These are SQLite's files whatever engine the suite runs on.
 */
import { chmodSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { useCliWorkspace } from "./support/cli.js";

const workspace = useCliWorkspace();

const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

describe("the SQLite database's files", () => {
  it("are owner-only: a new database, its -wal and -shm, a backup, and the folders cribline makes", async () => {
    const ws = workspace();
    // What this process's umask gives a file nobody narrows: the test means something only if others could read it.
    expect(modeOf(ws.file("plain.txt", "x"))).toBe("644");
    const database = join(ws.dir, "data", "deep", "cribline.db");
    const env = { DATABASE_URL: `sqlite:${database}` };
    const server = await ws.serve(env);
    expect(modeOf(join(ws.dir, "data"))).toBe("700");
    expect(modeOf(join(ws.dir, "data", "deep"))).toBe("700");
    for (const file of [database, `${database}-wal`, `${database}-shm`]) expect([file, modeOf(file)]).toEqual([file, "600"]);
    const copy = join(ws.dir, "copy.db");
    const backup = await ws.run(["backup", copy], env);
    expect(backup.code, backup.stderr).toBe(0);
    expect(modeOf(copy)).toBe("600");
    expect(await server.stop()).toEqual({ code: 0, signal: null });
  }, 60_000);

  it("narrows an existing database that others could read when it opens it, as the README says", async () => {
    const ws = workspace();
    const database = join(ws.dir, "old.db");
    const env = { DATABASE_URL: `sqlite:${database}` };
    expect((await ws.run(["tenants", "create", "acme"], env)).code).toBe(0);
    chmodSync(database, 0o644);
    const listed = await ws.run(["keys", "list"], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(modeOf(database)).toBe("600");
  });
});
