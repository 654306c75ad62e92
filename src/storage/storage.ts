/** What cribline sees of its database, whichever engine holds it (see database.ts to open one). */
import type { Kysely } from "kysely";
import type { Engine } from "./engine.js";
import type { Schema } from "./schema.js";

export interface Storage {
  readonly db: Kysely<Schema>;
  readonly engine: Engine;
  /** Resolves when the database answers a trivial query. */
  ping(): Promise<void>;
  /** Whether an error means the database is out of reach for now (retry), not a bug. */
  isUnavailable(error: unknown): boolean;
  /** The connection pool's state, where there is one (PostgreSQL), for metrics. */
  poolState?(): { inUse: number; idle: number; waiting: number };
  close(): Promise<void>;
}
