/**
 * Preloaded by run.mjs (`node --import`) into the real `cribline serve --workers N`, which
 * it leaves as it is: in the cluster's primary, it waits until all N workers listen and then
 * reports on fd 3, like bench/server.mjs, one JSON line:
 *
 *   {"url": "http://127.0.0.1:PORT", "pid": <primary>, "workers": [<pid>, ...]}
 *
 * The primary's own "listening" line cannot be read instead: it shares stdout with the
 * workers' request log, which goes to /dev/null. Workers inherit the flag (cluster forks
 * with the primary's execArgv); in them this module does nothing, and never touches fd 3,
 * which is their IPC channel there.
 */
import cluster from "node:cluster";
import { writeSync } from "node:fs";

if (cluster.isPrimary) {
  const expected = Number(process.env.BENCH_WORKERS);
  if (!Number.isInteger(expected) || expected < 1) throw new Error("bench/cluster-ready.mjs needs BENCH_WORKERS (run.mjs sets it)");
  const listening = new Map();
  let reported = false;
  cluster.on("listening", (worker, address) => {
    listening.set(worker.id, worker.process.pid);
    if (reported || listening.size < expected) return;
    reported = true;
    const url = `http://${address.address}:${address.port}`;
    writeSync(3, `${JSON.stringify({ url, pid: process.pid, workers: [...listening.values()] })}\n`);
  });
}
