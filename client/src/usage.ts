/**
 * The key's tenant's usage reports (a key with the `read` scope): `client.usage`. What each cost
 * center, employee, product, sector or device consumed per day, week, month or window of a time
 * zone (README, "Usage reports").
 */
import type { CriblineClient, RequestOptions } from "./index.js";
import type { components, operations } from "./openapi.js";
import { pageAt, pagesOf, type Page, type PageOptions } from "./paging.js";

/** A report's row: its period's start, its group's id(s) and name(s), per kind a count and a quantity, and the net quantity. */
export type UsageRow = components["schemas"]["UsageRow"];
/** What a report is of: `groupBy`, `createdSince` and `createdUntil` (required), `interval`, `timeZone`, and ids to keep. */
export type UsageParams = Omit<NonNullable<operations["getUsage"]["parameters"]["query"]>, "limit" | "cursor"> & {
  groupBy: string;
  createdSince: string;
  createdUntil: string;
};

export class Usage {
  constructor(private readonly client: CriblineClient) {}

  /** One page of the report: its parameters, and the cursor of the previous page (none for the first). */
  page(params: UsageParams, options: PageOptions = {}): Promise<Page<UsageRow>> {
    return pageAt(this.client, "/v1/usage", params, options);
  }

  /** Every page in turn, until the cursor is null. */
  pages(params: UsageParams, options: RequestOptions & { limit?: number } = {}): AsyncGenerator<Page<UsageRow>> {
    return pagesOf((cursor) => this.page(params, { ...options, cursor }));
  }

  /** Every row of the report, in period then group order, page after page (`limit` per request, 100 by default). */
  async *list(params: UsageParams, options: RequestOptions & { limit?: number } = {}): AsyncGenerator<UsageRow> {
    for await (const page of this.pages(params, { limit: 100, ...options })) yield* page.data;
  }
}
