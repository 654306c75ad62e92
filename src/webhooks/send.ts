/**
 * One HTTP POST to a webhook endpoint, with a time limit, no redirects followed, and the
 * server-side request forgery guard: unless allowed, an address on loopback, a private or
 * link-local network is refused, for a literal address and for every address a name resolves
 * to, checked when connecting (so a name that changes its answer after the endpoint was
 * registered is caught too).
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import http from "node:http";
import https from "node:https";
import { BlockList, isIP } from "node:net";

const PRIVATE = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.168.0.0", 16],
  ["224.0.0.0", 3],
] as const) {
  PRIVATE.addSubnet(network, prefix, "ipv4");
}
for (const [network, prefix] of [
  ["::", 127],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const) {
  PRIVATE.addSubnet(network, prefix, "ipv6");
}

/** Whether an address is on loopback, a private, link-local, shared or multicast network. */
export function isPrivateAddress(address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)?.[1];
  if (mapped !== undefined) return PRIVATE.check(mapped, "ipv4");
  const family = isIP(address);
  if (family === 0) return false;
  return PRIVATE.check(address, family === 4 ? "ipv4" : "ipv6");
}

export interface SendResult {
  /** The receiver's status, when it answered. */
  status?: number;
  /** Seconds the receiver asked to wait (Retry-After), when it did. */
  retryAfterSeconds?: number;
  error?: string;
  durationMs: number;
}

export interface SendOptions {
  timeoutMs: number;
  allowPrivate: boolean;
}

class RefusedAddress extends Error {}

function guardedLookup(allowPrivate: boolean) {
  return (
    hostname: string,
    options: LookupOptions,
    callback: (err: Error | null, address: string | LookupAddress[], family?: number) => void,
  ) => {
    dnsLookup(hostname, { ...options, all: true }, (err, addresses) => {
      if (err) return callback(err, []);
      const refused = allowPrivate ? undefined : addresses.find((a) => isPrivateAddress(a.address));
      if (refused !== undefined) return callback(new RefusedAddress(`${hostname} resolves to ${refused.address}, a private address`), []);
      if (options.all === true) return callback(null, addresses);
      return callback(null, addresses[0]!.address, addresses[0]!.family);
    });
  };
}

function retryAfter(header: string | undefined, now: number): number | undefined {
  if (header === undefined) return undefined;
  if (/^\d+$/.test(header.trim())) return Number(header.trim());
  const at = Date.parse(header);
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - now) / 1000));
}

export function post(url: string, headers: Record<string, string>, body: string, options: SendOptions): Promise<SendResult> {
  const started = performance.now();
  const elapsed = () => Math.round(performance.now() - started);
  return new Promise((resolve) => {
    let target: URL;
    try {
      target = new URL(url);
    } catch {
      return resolve({ error: "the endpoint URL does not parse", durationMs: 0 });
    }
    const literal = target.hostname.replace(/^\[|\]$/g, "");
    if (!options.allowPrivate && isPrivateAddress(literal)) {
      return resolve({ error: `refused: ${literal} is a private address`, durationMs: 0 });
    }
    const client = target.protocol === "https:" ? https : http;
    const request = client.request(
      target,
      {
        method: "POST",
        headers: {
          ...headers,
          "content-type": "application/json",
          "content-length": String(Buffer.byteLength(body)),
          "user-agent": "cribline-webhooks",
        },
        lookup: guardedLookup(options.allowPrivate) as never,
        // One limit on the whole attempt: connecting, sending and the answer's status line.
        signal: AbortSignal.timeout(options.timeoutMs),
      },
      (response) => {
        // The body is not read beyond what arrives: only the status counts.
        response.resume();
        resolve({
          status: response.statusCode,
          retryAfterSeconds: retryAfter(response.headers["retry-after"], Date.now()),
          durationMs: elapsed(),
        });
      },
    );
    request.on("error", (error) => {
      const message =
        error.name === "AbortError" || error.name === "TimeoutError" ? `no answer within ${options.timeoutMs / 1000} s` : error.message;
      resolve({ error: error instanceof RefusedAddress ? `refused: ${error.message}` : message, durationMs: elapsed() });
    });
    request.end(body);
  });
}
