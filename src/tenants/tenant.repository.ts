/** Tenants and API keys in storage. */
import type { Kysely } from "kysely";
import { QueryTemplates } from "../storage/query-template.js";
import type { Schema } from "../storage/schema.js";

export interface KeyRow {
  keyId: string;
  tenantId: number;
  tenantSlug: string;
  scopes: string[];
  createdAt: number;
  revokedAt: number | null;
}

export async function insertTenant(db: Kysely<Schema>, slug: string, now: number): Promise<number> {
  const row = await db.insertInto("tenants").values({ slug, created_at: now }).returning("id").executeTakeFirstOrThrow();
  return row.id;
}

export async function findTenantBySlug(db: Kysely<Schema>, slug: string): Promise<{ id: number; slug: string } | undefined> {
  return db.selectFrom("tenants").select(["id", "slug"]).where("slug", "=", slug).executeTakeFirst();
}

export async function countTenants(db: Kysely<Schema>): Promise<number> {
  const row = await db
    .selectFrom("tenants")
    .select((eb) => eb.fn.countAll<number>().as("n"))
    .executeTakeFirstOrThrow();
  return Number(row.n);
}

export async function insertKey(
  db: Kysely<Schema>,
  key: { keyId: string; tenantId: number; hash: string; scopes: string[]; now: number },
): Promise<void> {
  await db
    .insertInto("api_keys")
    .values({ key_id: key.keyId, tenant_id: key.tenantId, hash: key.hash, scopes: key.scopes.join(","), created_at: key.now })
    .execute();
}

const keyColumns = [
  "api_keys.key_id",
  "api_keys.tenant_id",
  "tenants.slug",
  "api_keys.scopes",
  "api_keys.created_at",
  "api_keys.revoked_at",
] as const;

function toKeyRow(row: {
  key_id: string;
  tenant_id: number;
  slug: string;
  scopes: string;
  created_at: number;
  revoked_at: number | null;
}): KeyRow {
  return {
    keyId: row.key_id,
    tenantId: row.tenant_id,
    tenantSlug: row.slug,
    scopes: row.scopes.split(","),
    createdAt: Number(row.created_at),
    revokedAt: row.revoked_at === null ? null : Number(row.revoked_at),
  };
}

type KeyJoinRow = Parameters<typeof toKeyRow>[0];
const keyByHash = new QueryTemplates<KeyJoinRow>();

/** Runs on every authenticated request, so its SQL is compiled once. */
export async function findKeyByHash(db: Kysely<Schema>, hash: string): Promise<KeyRow | undefined> {
  const query = keyByHash.fill(db, "key-by-hash", { hash }, (s) =>
    db
      .selectFrom("api_keys")
      .innerJoin("tenants", "tenants.id", "api_keys.tenant_id")
      .select(keyColumns)
      .where("api_keys.hash", "=", s.hash),
  );
  const row = (await db.executeQuery(query)).rows[0];
  return row === undefined ? undefined : toKeyRow(row);
}

export async function listKeys(db: Kysely<Schema>, tenantSlug: string | undefined): Promise<KeyRow[]> {
  let q = db.selectFrom("api_keys").innerJoin("tenants", "tenants.id", "api_keys.tenant_id").select(keyColumns);
  if (tenantSlug !== undefined) q = q.where("tenants.slug", "=", tenantSlug);
  return (await q.orderBy("tenants.slug").orderBy("api_keys.created_at").orderBy("api_keys.key_id").execute()).map(toKeyRow);
}

/** Marks a key revoked; false when there is no such key or it was revoked already. */
export async function revokeKey(db: Kysely<Schema>, keyId: string, now: number): Promise<boolean> {
  const result = await db
    .updateTable("api_keys")
    .set({ revoked_at: now })
    .where("key_id", "=", keyId)
    .where("revoked_at", "is", null)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
