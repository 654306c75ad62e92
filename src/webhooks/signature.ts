/**
 * Signing as Standard Webhooks defines it (https://www.standardwebhooks.com): a secret is
 * `whsec_` + base64 of random bytes; a signature is `v1,` + base64 of HMAC-SHA256, keyed by
 * the secret's bytes, over `<webhook-id>.<webhook-timestamp>.<body>`. While a rotated secret
 * is still valid, both sign, space-separated in one header.
 */
import { createHmac, randomBytes } from "node:crypto";

export const SECRET_PREFIX = "whsec_";

export function newSecret(): string {
  return `${SECRET_PREFIX}${randomBytes(24).toString("base64")}`;
}

export function sign(secret: string, id: string, timestampSeconds: number, body: string): string {
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), "base64");
  return `v1,${createHmac("sha256", key).update(`${id}.${timestampSeconds}.${body}`).digest("base64")}`;
}

/** The secrets an endpoint signs with at `at`: its own, and the one before its last rotation while that is still valid. */
export function signingSecrets(
  endpoint: { secret: string; previous_secret: string | null; previous_secret_until: number | null },
  at: number,
): string[] {
  const { secret, previous_secret: previous, previous_secret_until: until } = endpoint;
  return previous !== null && (until ?? 0) > at ? [secret, previous] : [secret];
}

/** The three Standard Webhooks headers of one attempt, signed with every secret given. */
export function webhookHeaders(secrets: readonly string[], id: string, timestampSeconds: number, body: string): Record<string, string> {
  return {
    "webhook-id": id,
    "webhook-timestamp": String(timestampSeconds),
    "webhook-signature": secrets.map((secret) => sign(secret, id, timestampSeconds, body)).join(" "),
  };
}
