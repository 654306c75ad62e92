/**
 * The server's memory policy. V8 sizes its heap for the machine (gigabytes here), so a sync
 * batch's short-lived objects were promoted and kept until a late major GC: 243 MB peak RSS
 * against 23 MB of live heap. Favouring size keeps the peak near 140 MB (measured with
 * `npm run bench`, which reports the throughput this costs).
 */
import v8 from "node:v8";

export function tuneRuntime(): void {
  v8.setFlagsFromString("--optimize-for-size");
}
