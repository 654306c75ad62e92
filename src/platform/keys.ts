/**
 * API key format: `crib_` + 32 random base62 characters (about 190 bits) + 6 base62
 * characters of CRC-32 over the random part. The fixed prefix lets secret scanners find
 * leaked keys; the checksum lets a mistyped or truncated key be refused without a database
 * look-up. Keys are stored only as a SHA-256 hash: they are random, so a slow hash adds nothing.
 */
import { createHash, randomInt } from "node:crypto";
import { crc32 } from "node:zlib";

export const KEY_PREFIX = "crib_";
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const RANDOM_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
/** A key id is the prefix and this many random characters. */
const KEY_ID_RANDOM = 8;
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${RANDOM_LENGTH + CHECKSUM_LENGTH}}$`);

export const SCOPES = ["read", "sync", "admin"] as const;
export type Scope = (typeof SCOPES)[number];

function base62(value: number, width: number): string {
  let out = "";
  for (let rest = value; out.length < width; rest = Math.floor(rest / 62)) out = BASE62[rest % 62] + out;
  return out;
}

function checksum(random: string): string {
  return base62(crc32(random), CHECKSUM_LENGTH);
}

export interface NewKey {
  /** The whole key, shown once. */
  key: string;
  /** Public identifier: the prefix and the first 8 random characters. */
  keyId: string;
  hash: string;
}

export function generateKey(): NewKey {
  let random = "";
  while (random.length < RANDOM_LENGTH) random += BASE62[randomInt(62)];
  const key = keyWith(random);
  return { key, keyId: keyIdOf(key), hash: hashKey(key) };
}

/** The well-formed key of a random part. */
export function keyWith(random: string): string {
  return `${KEY_PREFIX}${random}${checksum(random)}`;
}

const KEY_ID_PATTERN = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${KEY_ID_RANDOM}}$`);

export function keyIdOf(key: string): string {
  return key.slice(0, KEY_PREFIX.length + KEY_ID_RANDOM);
}

/** True when the text has the shape of a key id (the prefix and 8 letters or digits). */
export function isKeyId(text: string): boolean {
  return KEY_ID_PATTERN.test(text);
}

/** True when the key has cribline's shape and its checksum matches. */
export function isWellFormedKey(key: string): boolean {
  if (!KEY_PATTERN.test(key)) return false;
  const random = key.slice(KEY_PREFIX.length, KEY_PREFIX.length + RANDOM_LENGTH);
  return key.endsWith(checksum(random));
}

export function hashKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

export function parseScopes(text: string): Scope[] | undefined {
  const parts = text.split(",").map((s) => s.trim());
  if (parts.some((p) => !(SCOPES as readonly string[]).includes(p))) return undefined;
  return [...new Set(parts as Scope[])];
}
