#!/usr/bin/env node
/**
 * The first step of `npm test` (and so of CI): the programs the tests run besides Node,
 * Debian's `chromium` (the reference page and the client in a real browser) and
 * `redis-server` (rate limits shared through Redis). Missing ones are installed with apt-get
 * when this runs as root on a machine that has it; otherwise it stops before anything is
 * built or run, printing the command to run, so that a fresh machine never gets a suite that
 * fails for what it lacks.
 */
import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

/** Command the tests run, and the Debian package that provides it. */
const NEEDS = [
  { command: "chromium", pkg: "chromium" },
  { command: "redis-server", pkg: "redis-server" },
];

function onPath(command) {
  return (process.env.PATH ?? "").split(delimiter).some((dir) => {
    try {
      accessSync(join(dir || ".", command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

const missing = () => NEEDS.filter(({ command }) => !onPath(command));

/** apt-get's own output is kept to its errors; the install takes a minute or two. */
function aptGet(pkgs) {
  const env = { ...process.env, DEBIAN_FRONTEND: "noninteractive" };
  const update = spawnSync("apt-get", ["update", "-qq"], { stdio: "inherit", env });
  if (update.status !== 0) return false;
  const install = spawnSync("apt-get", ["install", "-y", "-qq", "--no-install-recommends", ...pkgs], { stdio: "inherit", env });
  return install.status === 0;
}

let lacking = missing();
if (lacking.length === 0) process.exit(0);

const pkgs = lacking.map(({ pkg }) => pkg);
const root = process.getuid?.() === 0;
const apt = onPath("apt-get");
if (root && apt) {
  console.log(`npm test: installing ${pkgs.join(" and ")} for the tests (apt-get install ${pkgs.join(" ")})`);
  if (aptGet(pkgs)) lacking = missing();
  if (lacking.length === 0) process.exit(0);
}

const names = lacking.map(({ command }) => command).join(" and ");
const why = !apt ? "this machine has no apt-get" : root ? "apt-get failed" : "installing needs root";
const sudo = root ? "" : "sudo ";
const command = `${sudo}apt-get update && ${sudo}apt-get install -y --no-install-recommends ${lacking.map(({ pkg }) => pkg).join(" ")}`;
console.error(
  `npm test needs Debian's ${names} on PATH, and ${why}. Run this (or install them with your system's packages), then npm test again:\n\n  ${command}\n`,
);
process.exit(1);
