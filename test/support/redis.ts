/**
 * A Redis server of the test's own, on a free port of loopback, that the test may stop and
 * start again on the same port: the machine's Redis is shared and is not the test's to stop.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { freePort } from "./cli.js";

export interface TestRedis {
  url: string;
  stop(): Promise<void>;
  start(): Promise<void>;
}

export async function startRedis(): Promise<TestRedis> {
  const port = await freePort();
  let child: ChildProcess | undefined;
  const start = async () => {
    const started = spawn("redis-server", ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    child = started;
    let output = "";
    await new Promise<void>((resolve, reject) => {
      started.stdout!.setEncoding("utf8").on("data", (text: string) => {
        output += text;
        if (output.includes("Ready to accept connections")) resolve();
      });
      started.once("error", (error: NodeJS.ErrnoException) =>
        reject(error.code === "ENOENT" ? new Error("this test needs Debian's redis-server: apt-get install redis-server") : error),
      );
      started.once("exit", (code) => reject(new Error(`redis-server exited (${code}): ${output}`)));
    });
  };
  await start();
  return {
    url: `redis://127.0.0.1:${port}`,
    start,
    async stop() {
      const running = child;
      child = undefined;
      if (running === undefined || running.exitCode !== null) return;
      const exited = once(running, "exit");
      running.kill("SIGKILL");
      await exited;
    },
  };
}
