/**
 * The request bodies of the webhook admin API, checked strictly: a bad URL, an unknown or
 * repeated event type, an unknown field, and (unless allowed) a URL on loopback or a private
 * network are each a 400 that says what to fix. Delivery checks the address again after DNS
 * (send.ts), so a name that later resolves elsewhere is still refused.
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { ApiError } from "../platform/errors.js";
import { parseRfc3339 } from "../platform/time.js";
import { EVENT_TYPES } from "./events.js";
import { isPrivateAddress } from "./send.js";

export const MAX_URL_LENGTH = 2000;
/** How long a rotated secret signs too, unless the request says otherwise: a day. */
export const DEFAULT_GRACE_SECONDS = 24 * 60 * 60;
export const MAX_GRACE_SECONDS = 7 * 24 * 60 * 60;
/** A name the resolver cannot answer for in this time is left to the check at delivery. */
const DNS_TIMEOUT_MS = 3000;

function invalid(detail: string): ApiError {
  return new ApiError("invalid_body", detail);
}

/** The body as an object with only the fields given; undefined when it was left out. */
function fieldsOf(body: unknown, fields: readonly string[]): Record<string, unknown> | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body !== "object" || Array.isArray(body)) throw invalid("the request body must be a JSON object");
  for (const name of Object.keys(body)) {
    if (!fields.includes(name)) {
      throw invalid(
        fields.length === 0
          ? `unknown field "${name}": this request takes no body`
          : `unknown field "${name}"; the fields are ${fields.join(", ")}`,
      );
    }
  }
  return body as Record<string, unknown>;
}

/** For actions that take no body: none, or an empty object. */
export function expectNoBody(body: unknown): void {
  fieldsOf(body, []);
}

export interface EndpointInput {
  url: string;
  events: string[];
}

export async function parseEndpointInput(body: unknown, allowPrivate: boolean): Promise<EndpointInput> {
  const fields = fieldsOf(body, ["url", "events"]);
  if (fields === undefined) throw invalid('send a JSON object with "url" and "events"');
  const url = await parseUrl(fields.url, allowPrivate);
  return { url, events: parseEvents(fields.events) };
}

async function parseUrl(raw: unknown, allowPrivate: boolean): Promise<string> {
  if (raw === undefined) throw new ApiError("invalid_url", 'the "url" field is required: the https:// URL to send events to');
  if (typeof raw !== "string") throw new ApiError("invalid_url", '"url" must be a string');
  if (raw.length > MAX_URL_LENGTH) throw new ApiError("invalid_url", `"url" must be at most ${MAX_URL_LENGTH} characters`);
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ApiError("invalid_url", `"url" must be an absolute http:// or https:// URL; got ${JSON.stringify(raw.slice(0, 100))}`);
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new ApiError("invalid_url", `"url" must use https:// (or http://); got ${url.protocol}//`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new ApiError("invalid_url", '"url" must not carry a user name or password: verify the webhook signature instead');
  }
  await checkHost(url.hostname, allowPrivate);
  return url.href;
}

/**
 * Refuses a name that does not resolve and, unless allowed, a host on loopback or a private
 * network: a literal address, or any address a name resolves to.
 */
async function checkHost(hostname: string, allowPrivate: boolean): Promise<void> {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const refuse = (address: string) =>
    new ApiError(
      "private_address",
      `"url" points at ${address === host ? address : `${host} (${address})`}, a loopback or private address; webhooks go to public addresses only`,
    );
  if (!allowPrivate && (host === "localhost" || host.endsWith(".localhost") || isPrivateAddress(host))) throw refuse(host);
  if (isIP(host) !== 0) return;
  let addresses: { address: string }[];
  try {
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error("timeout")), DNS_TIMEOUT_MS).unref());
    addresses = await Promise.race([lookup(host, { all: true }), timeout]);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOTFOUND" || code === "ENODATA") throw new ApiError("invalid_url", `"url" names a host that does not resolve: ${host}`);
    return; // the resolver is slow or down now: the address is checked again at every delivery
  }
  const found = allowPrivate ? undefined : addresses.find((a) => isPrivateAddress(a.address));
  if (found !== undefined) throw refuse(found.address);
}

function parseEvents(raw: unknown): string[] {
  const known = `the event types are ${EVENT_TYPES.join(", ")}`;
  if (raw === undefined) throw new ApiError("unknown_event", `the "events" field is required: a list of event types; ${known}`);
  if (!Array.isArray(raw) || raw.length === 0)
    throw new ApiError("unknown_event", `"events" must be a non-empty list of event types; ${known}`);
  const seen = new Set<string>();
  for (const event of raw) {
    if (typeof event !== "string" || !EVENT_TYPES.includes(event)) {
      throw new ApiError("unknown_event", `unknown event type ${JSON.stringify(event)}; ${known}`);
    }
    if (seen.has(event)) throw new ApiError("unknown_event", `event type "${event}" is listed twice; list each once`);
    seen.add(event);
  }
  return [...seen];
}

/** The grace period of a rotation, in seconds: the body's, or a day. */
export function parseRotation(body: unknown): number {
  const fields = fieldsOf(body, ["gracePeriodSeconds"]);
  const raw = fields?.gracePeriodSeconds;
  if (raw === undefined) return DEFAULT_GRACE_SECONDS;
  if (typeof raw !== "number" || !Number.isInteger(raw) || raw < 0 || raw > MAX_GRACE_SECONDS) {
    throw invalid(`"gracePeriodSeconds" must be a whole number of seconds from 0 to ${MAX_GRACE_SECONDS} (a week)`);
  }
  return raw;
}

/** The time range of a replay: `since` and `until`, RFC 3339, inclusive. */
export function parseReplayRange(body: unknown): { since: number; until: number } {
  const fields = fieldsOf(body, ["since", "until"]);
  const time = (name: string): { ms: number; subMillisecond: number } => {
    const raw = fields?.[name];
    if (raw === undefined) throw invalid(`send "since" and "until": the replay covers deliveries written in that range`);
    const parsed = typeof raw === "string" ? parseRfc3339(raw) : undefined;
    if (parsed === undefined) {
      throw new ApiError("invalid_time", `"${name}" must be an RFC 3339 date-time with time and zone, such as 2026-11-22T10:15:30Z`);
    }
    return parsed;
  };
  const since = time("since");
  const until = time("until");
  // Stored times are whole milliseconds: a lower bound with a finer fraction rounds up.
  const range = { since: since.ms + (since.subMillisecond > 0 ? 1 : 0), until: until.ms };
  if (since.ms > until.ms || (since.ms === until.ms && since.subMillisecond > until.subMillisecond)) {
    throw new ApiError("invalid_time_window", '"since" must be earlier than or equal to "until"');
  }
  return range;
}
