/** Creating tenants and issuing keys: shared by the command line, the demo and the tests. */
import type { Kysely } from "kysely";
import { generateKey, type Scope } from "../platform/keys.js";
import type { Schema } from "../storage/schema.js";
import { findTenantBySlug, insertKey, insertTenant } from "./tenant.repository.js";

export const SLUG_PATTERN = /^[a-z0-9][a-z0-9-]{0,62}$/;

export class TenantError extends Error {
  override name = "TenantError";
}

export async function createTenant(db: Kysely<Schema>, slug: string): Promise<number> {
  if (!SLUG_PATTERN.test(slug)) {
    throw new TenantError(`tenant slug must be 1 to 63 lower-case letters, digits or dashes, got "${slug}"`);
  }
  if ((await findTenantBySlug(db, slug)) !== undefined) throw new TenantError(`tenant "${slug}" exists already`);
  return insertTenant(db, slug, Date.now());
}

export interface IssuedKey {
  key: string;
  keyId: string;
  tenantId: number;
  scopes: Scope[];
}

/** What a key may be given besides its scopes: a name, and when it stops working. */
export interface KeyOptions {
  name?: string;
  expiresAt?: number | null;
}

export async function issueKey(db: Kysely<Schema>, slug: string, scopes: Scope[], options: KeyOptions = {}): Promise<IssuedKey> {
  const tenant = await findTenantBySlug(db, slug);
  if (tenant === undefined) throw new TenantError(`no tenant "${slug}"`);
  if (scopes.length === 0) throw new TenantError("a key needs at least one scope");
  const now = Date.now();
  if (options.expiresAt != null && options.expiresAt <= now) throw new TenantError("a key's expiry must be in the future");
  const { key, keyId, hash } = generateKey();
  await insertKey(db, { keyId, tenantId: tenant.id, hash, scopes, now, name: options.name ?? "", expiresAt: options.expiresAt ?? null });
  return { key, keyId, tenantId: tenant.id, scopes };
}
