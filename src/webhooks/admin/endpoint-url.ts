/**
 * What an endpoint's URL must be beyond its schema (an absolute URL of bounded length): http or
 * https, without credentials, naming a host that resolves, and, unless allowed, at a globally
 * reachable unicast address (../address.ts), whether a literal address or any address the name
 * resolves to. Delivery
 * checks the address again after DNS (../delivery/http-post.ts), so a name that later resolves
 * elsewhere is still refused.
 */
import { lookup } from "node:dns/promises";
import { ApiError } from "../../platform/errors.js";
import { isAddress, isPublicAddress } from "../address.js";

/** What a name resolves to: every address. Tests give a resolver of their own. */
export type Resolver = (host: string) => Promise<{ address: string }[]>;

const systemResolver: Resolver = (host) => lookup(host, { all: true });

/** A name the resolver cannot answer for in this time is left to the check at delivery. */
const DNS_TIMEOUT_MS = 3000;

/** The URL as cribline stores it, or a 400 saying what to fix. */
export async function checkEndpointUrl(raw: string, allowPrivate: boolean, resolve: Resolver = systemResolver): Promise<string> {
  const url = new URL(raw);
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new ApiError("invalid_url", `"url" must use https:// (or http://); got ${url.protocol}//`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new ApiError("invalid_url", '"url" must not carry a user name or password: verify the webhook signature instead');
  }
  await checkHost(url.hostname, allowPrivate, resolve);
  return url.href;
}

async function checkHost(hostname: string, allowPrivate: boolean, resolve: Resolver): Promise<void> {
  const host = hostname.replace(/^\[|\]$/g, "").toLowerCase();
  const refuse = (address: string) =>
    new ApiError(
      "private_address",
      `"url" points at ${address === host ? address : `${host} (${address})`}, which is not a public address (loopback, private, link-local, reserved or another special-purpose range); webhooks go to public addresses only, unless the server runs with CRIBLINE_WEBHOOKS_ALLOW_PRIVATE=true (for local development only)`,
    );
  const literal = isAddress(host);
  // A name with its root's dot (`localhost.`) is the same name.
  const name = host.replace(/\.$/, "");
  if (!allowPrivate && (name === "localhost" || name.endsWith(".localhost") || (literal && !isPublicAddress(host)))) throw refuse(host);
  if (literal) return;
  let addresses: { address: string }[];
  try {
    const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error("timeout")), DNS_TIMEOUT_MS).unref());
    addresses = await Promise.race([resolve(host), timeout]);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === "ENOTFOUND" || code === "ENODATA") throw new ApiError("invalid_url", `"url" names a host that does not resolve: ${host}`);
    return; // the resolver is slow or down now: the address is checked again at every delivery
  }
  const found = allowPrivate ? undefined : addresses.find((a) => !isPublicAddress(a.address));
  if (found !== undefined) throw refuse(found.address);
}
