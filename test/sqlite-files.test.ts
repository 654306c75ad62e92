/**
 * The embedded database's files, through the real executable (README: "Running it" and
 * "Backups on SQLite"): they hold webhook signing secrets and the cursor secret, so the
 * database, its -wal and -shm, a backup and the folder cribline makes are its owner's alone;
 * and one `serve` process serves a database file. These are SQLite's files whatever engine
 * the suite runs on.
 */
import { spawnSync } from "node:child_process";
import { chmodSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it } from "vitest";
import { lastLine, useCliWorkspace } from "./support/cli.js";

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
    // To exactly 0600: an owner's execute bit goes too.
    for (const mode of [0o644, 0o755, 0o604]) {
      chmodSync(database, mode);
      const listed = await ws.run(["keys", "list"], env);
      expect(listed.code, listed.stderr).toBe(0);
      expect([mode.toString(8), modeOf(database)]).toEqual([mode.toString(8), "600"]);
    }
  });
});

describe("serve on a SQLite database", () => {
  it("refuses a second process on the same file, naming the first, while other commands go on; starts again once the first is gone", async () => {
    const ws = workspace();
    const database = join(ws.dir, "one.db");
    const env = { DATABASE_URL: `sqlite:${database}` };
    const first = await ws.serve(env);
    // The same file by another path: through a link to its folder.
    symlinkSync(ws.dir, join(ws.dir, "link"));
    const second = await ws.launch({ DATABASE_URL: `sqlite:${join(ws.dir, "link", "one.db")}` });
    const ended = await Promise.race([second.exited, sleep(30_000).then(() => "still running")]);
    expect(ended, second.stdout()).toEqual({ code: 1, signal: null });
    expect(second.stderr()).toContain(
      `another cribline process is serving ${database} (pid ${first.pid}): one process serves a SQLite database`,
    );
    expect(second.stdout()).not.toMatch(/listening/);
    expect((await fetch(`${first.url}/healthz`)).status).toBe(200);
    // The commands documented to run beside the server still do.
    for (const args of [
      ["tenants", "create", "acme"],
      ["keys", "create", "--tenant", "acme", "--scopes", "read"],
      ["backup", join(ws.dir, "copy.db")],
    ]) {
      const result = await ws.run(args, env);
      expect(result.code, `${args.join(" ")}: ${result.stderr}`).toBe(0);
    }
    // Killed, it leaves its lock file behind, which holds nothing back.
    expect(await first.stop("SIGKILL")).toEqual({ code: null, signal: "SIGKILL" });
    const third = await ws.serve(env);
    const key = lastLine((await ws.run(["keys", "create", "--tenant", "acme", "--scopes", "read"], env)).stdout);
    const reply = await fetch(`${third.url}/v1/withdrawals`, { headers: { authorization: `Bearer ${key}` } });
    expect(reply.status).toBe(200);
    expect(await third.stop()).toEqual({ code: 0, signal: null });
    expect((await ws.serve(env)).url).toMatch(/^http:/);
  }, 90_000);

  it("says pid unknown when the pid file names a process that has ended", async () => {
    const ws = workspace();
    const database = join(ws.dir, "one.db");
    const env = { DATABASE_URL: `sqlite:${database}` };
    const first = await ws.serve(env);
    const ended = spawnSync(process.execPath, ["-e", ""]);
    expect(ended.status).toBe(0);
    writeFileSync(`${database}-serve.pid`, `${ended.pid}\n`);
    const second = await ws.launch(env);
    expect(await Promise.race([second.exited, sleep(30_000).then(() => "still running")])).toEqual({ code: 1, signal: null });
    expect(second.stderr()).toContain(
      `another cribline process is serving ${database} (pid unknown): one process serves a SQLite database`,
    );
    expect(await first.stop()).toEqual({ code: 0, signal: null });
  }, 60_000);
});
