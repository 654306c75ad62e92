/**
 * Verifying a webhook as Standard Webhooks says, with Web Crypto (Node.js 20+ and browsers):
 * the signature is HMAC-SHA256, keyed by the secret's bytes (`whsec_` + base64), over
 * `<webhook-id>.<webhook-timestamp>.<raw body>`; during a secret's rotation the request carries
 * a signature by each secret, and either of the receiver's secrets may match.
 */
import type { components } from "./openapi.js";

type Schemas = components["schemas"];
/** What each event type carries. */
interface EventData {
  "withdrawal.created": Schemas["Withdrawal"];
  "return.created": Schemas["Return"];
  "exchange.created": Schemas["Exchange"];
  "training-record.created": Schemas["TrainingRecord"];
  "employee.created": Schemas["Employee"];
  "employee.updated": Schemas["Employee"];
  "cost-center.created": Schemas["CostCenter"];
  "cost-center.updated": Schemas["CostCenter"];
  "sector.created": Schemas["Sector"];
  "sector.updated": Schemas["Sector"];
  "product.created": Schemas["Product"];
  "product.updated": Schemas["Product"];
  "device.created": Schemas["Device"];
  "device.updated": Schemas["Device"];
}
/** A verified event: `type` tells what `data` is. */
export type WebhookEvent = { [T in keyof EventData]: { type: T; timestamp: string; data: EventData[T] } }[keyof EventData];

export class WebhookVerificationError extends Error {
  override name = "WebhookVerificationError";
}

export interface VerifyOptions {
  /** The endpoint's secret, or both during a rotation. */
  secret: string | readonly string[];
  /** The request's headers (a Headers or a plain object). */
  headers: Headers | Record<string, string | string[] | undefined>;
  /** The raw body, exactly as received (a parser and serialiser in between would change the bytes). */
  body: string | Uint8Array;
  /** How far the request's timestamp may be from now (default 300 s), against replays. */
  toleranceSeconds?: number;
  /** Seconds since the epoch now (tests). */
  now?: number;
}

const header = (headers: VerifyOptions["headers"], name: string): string | undefined => {
  if (typeof (headers as Headers).get === "function") return (headers as Headers).get(name) ?? undefined;
  const value = (headers as Record<string, string | string[] | undefined>)[name];
  return Array.isArray(value) ? value[0] : value;
};

const fromBase64 = (text: string) => Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
const toBase64 = (bytes: ArrayBuffer) => btoa(String.fromCharCode(...new Uint8Array(bytes)));

/** The event, once the request is shown to come from cribline; a WebhookVerificationError otherwise. */
export async function verifyWebhook(options: VerifyOptions): Promise<WebhookEvent> {
  const id = header(options.headers, "webhook-id");
  const timestamp = header(options.headers, "webhook-timestamp");
  const signatures = header(options.headers, "webhook-signature");
  if (id === undefined || timestamp === undefined || signatures === undefined) {
    throw new WebhookVerificationError("missing webhook-id, webhook-timestamp or webhook-signature");
  }
  const now = options.now ?? Math.floor(Date.now() / 1000);
  if (!/^\d+$/.test(timestamp) || Math.abs(now - Number(timestamp)) > (options.toleranceSeconds ?? 300)) {
    throw new WebhookVerificationError("the timestamp is too old or too new");
  }
  const body = typeof options.body === "string" ? options.body : new TextDecoder().decode(options.body);
  const signed = new TextEncoder().encode(`${id}.${timestamp}.${body}`);
  const given = signatures.split(" ").map((s) => s.replace(/^v1,/, ""));
  for (const secret of typeof options.secret === "string" ? [options.secret] : options.secret) {
    const key = await crypto.subtle.importKey("raw", fromBase64(secret.replace(/^whsec_/, "")), { name: "HMAC", hash: "SHA-256" }, false, [
      "sign",
    ]);
    const expected = toBase64(await crypto.subtle.sign("HMAC", key, signed));
    if (given.some((signature) => constantTimeEqual(signature, expected))) return JSON.parse(body) as WebhookEvent;
  }
  throw new WebhookVerificationError("no signature matches the secret");
}

function constantTimeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let difference = 0;
  for (let i = 0; i < a.length; i += 1) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}
