/**
 * One HTTP POST to a webhook endpoint, with a time limit, no redirects followed, and the
 * server-side request forgery guard (../address.ts): unless allowed, an address that is not
 * globally reachable unicast is refused, for a literal address and for every address a name
 * resolves to, checked when connecting (so a name that changes its answer after the endpoint
 * was registered is caught too).
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import http from "node:http";
import https from "node:https";
import { isAddress, isPublicAddress } from "../address.js";
import type { AttemptResult } from "./retry-policy.js";

export interface SendResult extends AttemptResult {
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
      const refused = allowPrivate ? undefined : addresses.find((a) => !isPublicAddress(a.address));
      if (refused !== undefined)
        return callback(new RefusedAddress(`${hostname} resolves to ${refused.address}, not a public address`), []);
      const [first] = addresses;
      if (first === undefined) return callback(new Error(`${hostname} resolves to no address`), []);
      if (options.all === true) return callback(null, addresses);
      return callback(null, first.address, first.family);
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
    if (!options.allowPrivate && isAddress(literal) && !isPublicAddress(literal)) {
      return resolve({ error: `refused: ${literal} is not a public address`, durationMs: 0 });
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
