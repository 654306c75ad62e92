/**
 * The server-side request forgery guard's verdict on one address: webhooks go to public
 * addresses only, unless a setting allows loopback and private networks (local development).
 * An endpoint's address is checked when it is registered (admin/endpoint-url.ts) and again at
 * every delivery, after DNS (delivery/http-post.ts).
 */
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
