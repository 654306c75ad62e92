/**
 * The webhook event types, from the collections: `<singular>.created` for every collection,
 * and `<singular>.updated` for master data (transactions never change).
 */
import type { Collection } from "../collections/define.js";
import { COLLECTIONS } from "../collections/registry.js";

export type Change = "created" | "updated";

export function eventType(collection: Collection, change: Change): string {
  return `${collection.singular}.${change}`;
}

export const EVENT_TYPES: readonly string[] = COLLECTIONS.flatMap((c) =>
  c.kind === "master" ? [eventType(c, "created"), eventType(c, "updated")] : [eventType(c, "created")],
);
