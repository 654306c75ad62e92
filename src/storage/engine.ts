/** What differs between the storage engines, stated once as data. */
import { sql, type ColumnDataType, type RawBuilder } from "kysely";

export type Engine = "sqlite" | "postgres";

export interface EngineTraits {
  /** Column type of an auto-numbered integer primary key. */
  serialType: ColumnDataType;
  /** Column type of milliseconds since the epoch. */
  millisType: ColumnDataType;
  /** Column type of a text key compared in code-point order. */
  sortKeyType: RawBuilder<unknown>;
}

export const ENGINE_TRAITS: Record<Engine, EngineTraits> = {
  // SQLite's default BINARY collation compares UTF-8 bytes: code-point order.
  sqlite: { serialType: "integer", millisType: "integer", sortKeyType: sql`text` },
  // PostgreSQL's "C" collation compares bytes too, and keeps text indexes usable for ranges.
  postgres: { serialType: "serial", millisType: "bigint", sortKeyType: sql`text collate "C"` },
};
