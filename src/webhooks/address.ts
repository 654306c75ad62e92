/**
 * The server-side request forgery guard's verdict on one address: webhooks go to globally
 * reachable unicast addresses only, unless a setting allows every address (local development).
 * An endpoint's address is checked when it is registered (admin/endpoint-url.ts) and again at
 * every delivery, after DNS (delivery/http-post.ts).
 *
 * ipaddr.js classifies an address by the ranges of the IANA IPv4 and IPv6 special-purpose
 * address registries; anything it does not call `unicast` is refused, and so are the ranges it
 * does not know yet (below). An IPv6 address that carries an IPv4 address (IPv4-mapped and
 * -translated, IPv4-compatible, NAT64 64:ff9b::/96, 6to4, Teredo) is judged by the IPv4
 * address inside: on a network with NAT64, 64:ff9b::7f00:1 reaches the sender's own loopback.
 */
import ipaddr from "ipaddr.js";

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;

/** Registry ranges newer than ipaddr.js's list, and IPv6 space that is not global unicast. */
const ALSO_REFUSED_V6: [IPv6, number][] = (
  [
    ["64:ff9b:1::", 48], // local-use NAT64 (RFC 8215): not globally reachable
    ["3fff::", 20], // documentation (RFC 9637)
    ["5f00::", 16], // SRv6 SIDs (RFC 9602)
    ["fec0::", 10], // site-local, deprecated (RFC 3879)
  ] as const
).map(([address, bits]) => [ipaddr.IPv6.parse(address), bits]);

/** IANA allocates global unicast IPv6 from 2000::/3 only; the rest is reserved or special. */
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parse("2000::");

const v4 = (bytes: number[]): IPv4 => new ipaddr.IPv4(bytes);

/** The IPv4 addresses an IPv6 address carries, when it is one of the forms that carry them. */
function embedded(address: IPv6): IPv4[] | undefined {
  const bytes = address.toByteArray();
  const range = address.range();
  if (range === "ipv4Mapped" || range === "rfc6145" || range === "rfc6052") return [v4(bytes.slice(12))];
  // IPv4-compatible (::a.b.c.d, deprecated): the first 96 bits zero; :: and ::1 are not.
  if (bytes.slice(0, 12).every((b) => b === 0) && range !== "unspecified" && range !== "loopback") return [v4(bytes.slice(12))];
  if (range === "6to4") return [v4(bytes.slice(2, 6))];
  // Teredo: the server's address in bits 32-63, the client's, inverted, in the last 32.
  if (range === "teredo") return [v4(bytes.slice(4, 8)), v4(bytes.slice(12).map((b) => b ^ 0xff))];
  return undefined;
}

function isGlobalV4(address: IPv4): boolean {
  return address.range() === "unicast";
}

function isGlobalV6(address: IPv6): boolean {
  const inside = embedded(address);
  if (inside !== undefined) return inside.every(isGlobalV4);
  if (address.range() !== "unicast") return false;
  if (ALSO_REFUSED_V6.some(([network, bits]) => address.match(network, bits))) return false;
  return address.match(GLOBAL_UNICAST_V6, 3);
}

/**
 * Whether an address (IPv4 dotted decimal, or IPv6, as a URL or a resolver writes them) may
 * receive webhooks: globally reachable unicast. Anything that does not parse as an address is
 * not one, and is refused.
 */
export function isPublicAddress(address: string): boolean {
  const text = address.replace(/^\[|\]$/g, "");
  if (ipaddr.IPv4.isValidFourPartDecimal(text)) return isGlobalV4(ipaddr.IPv4.parse(text));
  if (!ipaddr.IPv6.isValid(text) || text.includes("%")) return false;
  return isGlobalV6(ipaddr.IPv6.parse(text));
}

/** Whether the text is an IP address rather than a name (as a URL's hostname writes one). */
export function isAddress(text: string): boolean {
  const bare = text.replace(/^\[|\]$/g, "");
  return ipaddr.IPv4.isValidFourPartDecimal(bare) || ipaddr.IPv6.isValid(bare);
}
