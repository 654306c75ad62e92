/**
 * What a request's headers say as they were sent: Node's parsed `headers` join some repeats
 * and drop others, so a question about repeats is answered from the raw list.
 */
import type { IncomingMessage } from "node:http";

/** How many times a request carries a header (`name` in lower case), whether Node joined, dropped or kept the repeats. */
export function headerCount(request: IncomingMessage, name: string): number {
  let count = 0;
  const raw = request.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const header = raw[i] ?? "";
    if (header.length === name.length && header.toLowerCase() === name) count += 1;
  }
  return count;
}
