/** Headless Chromium (Debian's `chromium`) for tests that need a real browser: the DOM of a page once its scripts have run. */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

const run = promisify(execFile);

/**
 * The page's DOM after up to 10 s of virtual time, with a profile of its own. The flags keep
 * Chromium off the network but for the page (this machine refuses other connections).
 */
export async function dumpDom(url: string, extraFlags: string[] = []): Promise<string> {
  const profile = mkdtempSync(join(tmpdir(), "cribline-chromium-"));
  try {
    const { stdout } = await run("chromium", [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
      ...extraFlags,
      `--user-data-dir=${profile}`,
      "--virtual-time-budget=10000",
      "--dump-dom",
      url,
    ]);
    return stdout;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") throw new Error("this test needs Debian's chromium: apt-get install chromium");
    throw error;
  } finally {
    rmSync(profile, { recursive: true, force: true });
  }
}
