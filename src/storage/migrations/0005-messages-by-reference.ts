/**
 * A transaction's webhook message names its record instead of copying it: transactions never
 * change once stored, so the payload is built when the message is sent, from the record as its
 * list returns it (webhooks/delivery/). The copy had doubled what sync wrote for every record
 * announced, and kept a second copy of it for ever. Master data may change again before its
 * message goes, so its messages keep their payload as of the change.
 */
import { sql, type Kysely } from "kysely";
import type { Engine } from "../engine.js";

export function messagesByReferenceMigration(engine: Engine) {
  return {
    async up(db: Kysely<unknown>): Promise<void> {
      if (engine.altersColumns) {
        await sql`alter table webhook_messages add column record_id ${engine.sortKeyType}`.execute(db);
        await sql`alter table webhook_messages alter column payload drop not null`.execute(db);
        return;
      }
      // SQLite cannot drop a NOT NULL: the table is rebuilt (the payload stays last, see 0004).
      await sql`create table webhook_messages_next (
        tenant_id integer not null,
        id text not null,
        type text not null,
        created_at integer not null,
        record_id text,
        payload text,
        constraint webhook_messages_pkey primary key (tenant_id, id)
      ) without rowid`.execute(db);
      await sql`insert into webhook_messages_next (tenant_id, id, type, created_at, payload)
        select tenant_id, id, type, created_at, payload from webhook_messages`.execute(db);
      await sql`drop table webhook_messages`.execute(db);
      await sql`alter table webhook_messages_next rename to webhook_messages`.execute(db);
    },
  };
}
