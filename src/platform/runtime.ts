/**
 * The server's memory policy, per engine.
 *
 * SQLite: cribline is one process, with a memory budget (200 MB in `npm run bench`). V8 sizes
 * its heap for the machine (gigabytes here), so a sync batch's short-lived objects were
 * promoted and kept until a late major GC: 243 MB peak RSS against 23 MB of live heap.
 * Favouring size keeps the peak under 190 MB.
 *
 * PostgreSQL: cribline scales out over processes and has no such budget, and the same flag
 * made one process's page throughput bimodal: each server settled either near 5,000 req/s or
 * near 3,300 (p99 3-5 ms against 11-15 ms), the slow one spending three times as long in GC
 * per request. With V8's defaults, eight servers gave 3,950-4,820 req/s, at about 205 MB RSS
 * under page load (first page, 10 connections, alternating runs on the bench's data set).
 */
import v8 from "node:v8";
import type { Engine } from "../storage/engine.js";

export function tuneRuntime(engine: Engine): void {
  if (engine === "sqlite") v8.setFlagsFromString("--optimize-for-size");
}
