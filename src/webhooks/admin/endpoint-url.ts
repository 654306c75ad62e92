/**
 * What an endpoint's URL must be beyond its schema (an absolute URL of bounded length): http or
 * https, without credentials, naming a host that resolves, and, unless allowed, not on loopback
 * or a private network, whether a literal address or any address the name resolves to. Delivery
 * checks the address again after DNS (../delivery/http-post.ts), so a name that later resolves
 * elsewhere is still refused.
 */
import { lookup } from "node:dns/promises";
import { isIP } from "node:net";
import { ApiError } from "../../platform/errors.js";
import { isPrivateAddress } from "../address.js";

/** A name the resolver cannot answer for in this time is left to the check at delivery. */
const DNS_TIMEOUT_MS = 3000;

/** The URL as cribline stores it, or a 400 saying what to fix. */
export async function checkEndpointUrl(raw: string, allowPrivate: boolean): Promise<string> {
  const url = new URL(raw);
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    throw new ApiError("invalid_url", `"url" must use https:// (or http://); got ${url.protocol}//`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new ApiError("invalid_url", '"url" must not carry a user name or password: verify the webhook signature instead');
  }
  await checkHost(url.hostname, allowPrivate);
  return url.href;
}

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
