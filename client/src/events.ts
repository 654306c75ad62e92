/**
 * The key's tenant's events (a key with the `read` scope): `client.events`. Every record created
 * and every master-data change, newest first, within the server's retention period (README,
 * "Events"): what webhooks carry, for a client that polls instead.
 */
import type { CriblineClient, RequestOptions } from "./index.js";
import type { components, operations } from "./openapi.js";
import { pageAt, pagesOf, type Page, type PageOptions } from "./paging.js";

/** An event: its id (the `webhook-id` of its deliveries), type, when it was recorded, and the record then. */
export type Event = components["schemas"]["Event"];
/** The events list's filters: `type`, `createdSince`, `createdUntil` (on the event's own time). */
export type EventFilters = Omit<NonNullable<operations["listEvents"]["parameters"]["query"]>, "limit" | "cursor">;

export class Events {
  constructor(private readonly client: CriblineClient) {}

  /** One page: the filters, and the cursor of the previous page (none for the first). */
  page(filters: EventFilters = {}, options: PageOptions = {}): Promise<Page<Event>> {
    return pageAt(this.client, "/v1/events", filters, options);
  }

  /** Every page in turn, until the cursor is null. */
  pages(filters: EventFilters = {}, options: RequestOptions & { limit?: number } = {}): AsyncGenerator<Page<Event>> {
    return pagesOf((cursor) => this.page(filters, { ...options, cursor }));
  }

  /** Every event, newest first, page after page (`limit` per request, 100 by default). */
  async *list(filters: EventFilters = {}, options: RequestOptions & { limit?: number } = {}): AsyncGenerator<Event> {
    for await (const page of this.pages(filters, { limit: 100, ...options })) yield* page.data;
  }

  /** One event by its id; a CriblineError with `not_found` for one the tenant has not, or no longer keeps. */
  get(id: string, options: RequestOptions = {}): Promise<Event> {
    return this.client.request("GET", `/v1/events/${encodeURIComponent(id)}`, undefined, options) as Promise<Event>;
  }
}
