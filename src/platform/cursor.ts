/**
 * Cursors are opaque to clients and authenticated: base64url(JSON payload) "." base64url(HMAC).
 * The MAC is checked before anything is decoded, so a corrupted, truncated or hand-made
 * cursor is refused rather than half-parsed. The payload binds the cursor to the tenant,
 * the collection and the exact filters it was made for, and carries the position (the sort
 * key and id of the last row returned) as stored, so no precision is lost on any engine.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";

export type SortValue = string | number;

export interface CursorPosition {
  key: SortValue;
  id: string;
}

interface Payload {
  v: 1;
  t: number; // tenant id
  c: string; // collection
  f: string; // hash of the canonical filters
  k: SortValue;
  i: string;
  p?: string; // the walk's plan, for a list that chooses one
}

const MAC_BYTES = 16;
const SHAPE = /^[A-Za-z0-9_-]{1,2048}\.[A-Za-z0-9_-]{22}$/;

/** A cursor's position and the tenant it was issued to, which the caller compares with its own. */
export type CursorCheck =
  | { ok: true; tenantId: number; position: CursorPosition; plan?: string }
  | { ok: false; reason: "malformed" | "mismatch" };

export class CursorCodec {
  constructor(private readonly secret: string) {}

  private mac(body: string): Buffer {
    return createHmac("sha256", this.secret).update(body).digest().subarray(0, MAC_BYTES);
  }

  encode(tenantId: number, collection: string, filters: string, position: CursorPosition, plan?: string): string {
    const payload: Payload = { v: 1, t: tenantId, c: collection, f: filterHash(filters), k: position.key, i: position.id };
    if (plan !== undefined) payload.p = plan;
    const body = Buffer.from(JSON.stringify(payload)).toString("base64url");
    return `${body}.${this.mac(body).toString("base64url")}`;
  }

  decode(cursor: string, collection: string, filters: string): CursorCheck {
    if (!SHAPE.test(cursor)) return { ok: false, reason: "malformed" }; // also fixes the MAC's length
    const [body = "", mac = ""] = cursor.split(".");
    // Compared as text: base64url decoding ignores the spare bits of the last character,
    // so comparing decoded bytes would accept several spellings of one MAC.
    const expected = Buffer.from(this.mac(body).toString("base64url"));
    if (!timingSafeEqual(Buffer.from(mac), expected)) return { ok: false, reason: "malformed" };
    let payload: Payload;
    try {
      payload = JSON.parse(Buffer.from(body, "base64url").toString("utf8")) as Payload;
    } catch {
      return { ok: false, reason: "malformed" };
    }
    if (
      payload.v !== 1 ||
      typeof payload.t !== "number" ||
      (typeof payload.k !== "string" && typeof payload.k !== "number") ||
      typeof payload.i !== "string" ||
      (payload.p !== undefined && typeof payload.p !== "string")
    ) {
      return { ok: false, reason: "malformed" };
    }
    if (payload.c !== collection || payload.f !== filterHash(filters)) return { ok: false, reason: "mismatch" };
    return { ok: true, tenantId: payload.t, position: { key: payload.k, id: payload.i }, plan: payload.p };
  }
}

const filterHashes = new Map<string, string>();

/** Most pages share a few filter sets (none, above all), so their hashes are kept. */
function filterHash(filters: string): string {
  let hash = filterHashes.get(filters);
  if (hash === undefined) {
    hash = createHash("sha256").update(filters).digest("base64url").slice(0, 16);
    if (filterHashes.size >= 1000) filterHashes.clear();
    filterHashes.set(filters, hash);
  }
  return hash;
}
