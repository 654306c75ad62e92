/** Settings cribline keeps in its own database (the generated cursor secret, on SQLite). */
import type { Kysely } from "kysely";
import type { Schema } from "./schema.js";

export async function getSetting(db: Kysely<Schema>, name: string): Promise<string | undefined> {
  return (await db.selectFrom("settings").select("value").where("name", "=", name).executeTakeFirst())?.value;
}

/** Stores a setting unless one of that name exists; returns the value that is kept. */
export async function putSettingOnce(db: Kysely<Schema>, name: string, value: string): Promise<string> {
  await db
    .insertInto("settings")
    .values({ name, value })
    .onConflict((oc) => oc.column("name").doNothing())
    .execute();
  const kept = await getSetting(db, name);
  if (kept === undefined) throw new Error(`setting ${name} was not stored`);
  return kept;
}
