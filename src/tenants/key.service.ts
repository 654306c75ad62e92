/** A tenant's API keys as its admin manages them: its own, by id, or a 404. */
import type { Kysely } from "kysely";
import { NoBody, readBody } from "../platform/body.js";
import type { CursorCodec } from "../platform/cursor.js";
import { ApiError } from "../platform/errors.js";
import { generateKey, isKeyId, type Scope } from "../platform/keys.js";
import { readPage, type Page } from "../platform/pager.js";
import type { PageRequest } from "../platform/query-string.js";
import { formatTime, parseRfc3339 } from "../platform/time.js";
import type { Schema } from "../storage/schema.js";
import { KEY_RULES, KeyBody } from "./key.schema.js";
import { findTenantKey, insertKey, revokeTenantKey, tenantKeyPage, tenantZone, type KeyRow } from "./tenant.repository.js";

function notFound(id: string): ApiError {
  return new ApiError("not_found", `no API key with id ${JSON.stringify(id.slice(0, 100))}`);
}

const timeOrNull = (ms: number | null) => (ms === null ? null : formatTime(ms));

/** A key as the API shows it: never its hash. */
export function toApiKey(row: KeyRow) {
  return {
    id: row.keyId,
    name: row.name,
    scopes: row.scopes,
    createdAt: formatTime(row.createdAt),
    expiresAt: timeOrNull(row.expiresAt),
    lastUsedAt: timeOrNull(row.lastUsedAt),
    revokedAt: timeOrNull(row.revokedAt),
  };
}

/** The key a request was made with, and its tenant's slug and time zone. */
export async function currentKey(db: Kysely<Schema>, principal: { tenantId: number; keyId: string }) {
  const row = await findTenantKey(db, principal.tenantId, principal.keyId);
  if (row === undefined) throw notFound(principal.keyId);
  return { ...toApiKey(row), tenant: row.tenantSlug, timeZone: await tenantZone(db, principal.tenantId) };
}

/** Makes a key of the tenant; the key itself is returned only here. */
export async function createKey(db: Kysely<Schema>, tenantId: number, body: unknown, now: number): Promise<{ row: KeyRow; key: string }> {
  const input = readBody(KeyBody, KEY_RULES, body);
  let expiresAt: number | null = null;
  if (input.expiresAt !== undefined) {
    // The schema's date-time format is the strict parser, so it parses.
    expiresAt = parseRfc3339(input.expiresAt)?.ms ?? 0;
    if (expiresAt <= now) throw new ApiError("invalid_time", `"expiresAt" must be in the future; got ${JSON.stringify(input.expiresAt)}`);
  }
  const { key, keyId, hash } = generateKey();
  await insertKey(db, { keyId, tenantId, hash, scopes: input.scopes as Scope[], now, name: input.name, expiresAt });
  return { row: await getKey(db, tenantId, keyId), key };
}

export async function getKey(db: Kysely<Schema>, tenantId: number, id: string): Promise<KeyRow> {
  const row = isKeyId(id) ? await findTenantKey(db, tenantId, id) : undefined;
  if (row === undefined) throw notFound(id);
  return row;
}

export async function keysPage(db: Kysely<Schema>, cursors: CursorCodec, tenantId: number, request: PageRequest): Promise<Page<KeyRow>> {
  const paged = { list: "api-keys", filterKey: "[]", positionOf: (row: KeyRow) => ({ key: row.createdAt, id: row.keyId }) };
  return readPage(cursors, tenantId, paged, request, (after, take) => tenantKeyPage(db, tenantId, after, take));
}

/** Revokes the tenant's key (once: a revoked key keeps its first revokedAt). The action takes no body. */
export async function revokeOwnKey(db: Kysely<Schema>, tenantId: number, id: string, body: unknown, now: number): Promise<KeyRow> {
  readBody(NoBody, {}, body);
  const row = await getKey(db, tenantId, id);
  if (row.revokedAt === null) await revokeTenantKey(db, tenantId, id, now);
  return getKey(db, tenantId, id);
}
