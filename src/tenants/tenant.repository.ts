/** Tenants and API keys in storage. */
import { sql, type Kysely } from "kysely";
import type { CursorPosition } from "../platform/cursor.js";
import { QueryTemplates } from "../storage/query-template.js";
import type { Schema } from "../storage/schema.js";

export interface KeyRow {
  keyId: string;
  tenantId: number;
  tenantSlug: string;
  scopes: string[];
  createdAt: number;
  revokedAt: number | null;
  name: string;
  expiresAt: number | null;
  lastUsedAt: number | null;
  /** The tenant's own rate limits (requests a minute per key); null: the defaults. */
  readLimit: number | null;
  syncLimit: number | null;
}

export async function tenantZone(db: Kysely<Schema>, tenantId: number): Promise<string> {
  const row = await db.selectFrom("tenants").select("time_zone").where("id", "=", tenantId).executeTakeFirst();
  return row?.time_zone ?? "UTC";
}

export async function insertTenant(db: Kysely<Schema>, slug: string, now: number): Promise<number> {
  const row = await db.insertInto("tenants").values({ slug, created_at: now }).returning("id").executeTakeFirstOrThrow();
  return row.id;
}

export async function findTenantBySlug(db: Kysely<Schema>, slug: string): Promise<{ id: number; slug: string } | undefined> {
  return db.selectFrom("tenants").select(["id", "slug"]).where("slug", "=", slug).executeTakeFirst();
}

export interface TenantSummary {
  slug: string;
  createdAt: number;
  /** Its keys, whatever their state, and those that work at the time asked about. */
  keys: number;
  activeKeys: number;
}

/** Every tenant, by slug, with how many keys it has and how many of them neither are revoked nor expired at `now`. */
export async function listTenants(db: Kysely<Schema>, now: number): Promise<TenantSummary[]> {
  const rows = await db
    .selectFrom("tenants")
    .leftJoin("api_keys", "api_keys.tenant_id", "tenants.id")
    .select((eb) => [
      "tenants.slug",
      "tenants.created_at",
      eb.fn.count<number>("api_keys.key_id").as("keys"),
      sql<number>`count(case when ${eb.ref("api_keys.revoked_at")} is null and (${eb.ref("api_keys.expires_at")} is null or ${eb.ref("api_keys.expires_at")} > ${now}) then ${eb.ref("api_keys.key_id")} end)`.as(
        "active_keys",
      ),
    ])
    .groupBy(["tenants.id", "tenants.slug", "tenants.created_at"])
    .orderBy("tenants.slug")
    .execute();
  return rows.map((r) => ({ slug: r.slug, createdAt: Number(r.created_at), keys: Number(r.keys), activeKeys: Number(r.active_keys) }));
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
  key: { keyId: string; tenantId: number; hash: string; scopes: string[]; now: number; name: string; expiresAt: number | null },
): Promise<void> {
  await db
    .insertInto("api_keys")
    .values({
      key_id: key.keyId,
      tenant_id: key.tenantId,
      hash: key.hash,
      scopes: key.scopes.join(","),
      created_at: key.now,
      name: key.name,
      expires_at: key.expiresAt,
    })
    .execute();
}

const keyColumns = [
  "api_keys.key_id",
  "api_keys.tenant_id",
  "tenants.slug",
  "api_keys.scopes",
  "api_keys.created_at",
  "api_keys.revoked_at",
  "api_keys.name",
  "api_keys.expires_at",
  "api_keys.last_used_at",
  "tenants.read_limit",
  "tenants.sync_limit",
] as const;

const msOrNull = (value: number | null) => (value === null ? null : Number(value));

function toKeyRow(row: {
  key_id: string;
  tenant_id: number;
  slug: string;
  scopes: string;
  created_at: number;
  revoked_at: number | null;
  name: string;
  expires_at: number | null;
  last_used_at: number | null;
  read_limit: number | null;
  sync_limit: number | null;
}): KeyRow {
  return {
    keyId: row.key_id,
    tenantId: row.tenant_id,
    tenantSlug: row.slug,
    scopes: row.scopes.split(","),
    createdAt: Number(row.created_at),
    revokedAt: msOrNull(row.revoked_at),
    name: row.name,
    expiresAt: msOrNull(row.expires_at),
    lastUsedAt: msOrNull(row.last_used_at),
    readLimit: msOrNull(row.read_limit),
    syncLimit: msOrNull(row.sync_limit),
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

/** A key by its id, of any tenant (the operator's command line). */
export async function findKeyById(db: Kysely<Schema>, keyId: string): Promise<KeyRow | undefined> {
  const row = await db
    .selectFrom("api_keys")
    .innerJoin("tenants", "tenants.id", "api_keys.tenant_id")
    .select(keyColumns)
    .where("api_keys.key_id", "=", keyId)
    .executeTakeFirst();
  return row === undefined ? undefined : toKeyRow(row);
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

/** A key of the tenant by its id; another tenant's is not found. */
export async function findTenantKey(db: Kysely<Schema>, tenantId: number, keyId: string): Promise<KeyRow | undefined> {
  const row = await db
    .selectFrom("api_keys")
    .innerJoin("tenants", "tenants.id", "api_keys.tenant_id")
    .select(keyColumns)
    .where("api_keys.tenant_id", "=", tenantId)
    .where("api_keys.key_id", "=", keyId)
    .executeTakeFirst();
  return row === undefined ? undefined : toKeyRow(row);
}

/** Up to `take` of the tenant's keys after `after`, newest first. */
export async function tenantKeyPage(
  db: Kysely<Schema>,
  tenantId: number,
  after: CursorPosition | undefined,
  take: number,
): Promise<KeyRow[]> {
  let query = db
    .selectFrom("api_keys")
    .innerJoin("tenants", "tenants.id", "api_keys.tenant_id")
    .select(keyColumns)
    .where("api_keys.tenant_id", "=", tenantId);
  if (after !== undefined) {
    query = query.where((eb) => eb(eb.refTuple("api_keys.created_at", "api_keys.key_id"), "<", eb.tuple(Number(after.key), after.id)));
  }
  const rows = await query.orderBy("api_keys.created_at", "desc").orderBy("api_keys.key_id", "desc").limit(sql.lit(take)).execute();
  return rows.map(toKeyRow);
}

/** Marks the tenant's key revoked, when it was not already. */
export async function revokeTenantKey(db: Kysely<Schema>, tenantId: number, keyId: string, now: number): Promise<void> {
  await db
    .updateTable("api_keys")
    .set({ revoked_at: now })
    .where("tenant_id", "=", tenantId)
    .where("key_id", "=", keyId)
    .where("revoked_at", "is", null)
    .execute();
}

/** Records when keys were last used, by hash: never moving a key's time back. */
export async function recordKeyUse(db: Kysely<Schema>, uses: ReadonlyMap<string, number>): Promise<void> {
  for (const [hash, at] of uses) {
    await db
      .updateTable("api_keys")
      .set({ last_used_at: at })
      .where("hash", "=", hash)
      .where((eb) => eb.or([eb("last_used_at", "is", null), eb("last_used_at", "<", at)]))
      .execute();
  }
}

/** A tenant's own rate limits (null: the defaults). */
export async function tenantLimits(db: Kysely<Schema>, tenantId: number): Promise<{ read: number | null; sync: number | null }> {
  const row = await db.selectFrom("tenants").select(["read_limit", "sync_limit"]).where("id", "=", tenantId).executeTakeFirstOrThrow();
  return { read: row.read_limit, sync: row.sync_limit };
}

/** Every tenant's own rate limits, or one tenant's, by slug. */
export async function listTenantLimits(db: Kysely<Schema>, slug?: string) {
  let q = db.selectFrom("tenants").select(["slug", "read_limit as read", "sync_limit as sync"]);
  if (slug !== undefined) q = q.where("slug", "=", slug);
  return q.orderBy("slug").execute();
}

/** Sets a tenant's own rate limits (null: back to the defaults); false when there is no such tenant. */
export async function setTenantLimits(
  db: Kysely<Schema>,
  slug: string,
  limits: { read: number | null; sync: number | null },
): Promise<boolean> {
  const result = await db
    .updateTable("tenants")
    .set({ read_limit: limits.read, sync_limit: limits.sync })
    .where("slug", "=", slug)
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
