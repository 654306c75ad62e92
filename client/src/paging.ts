/** How the client reads a list of the API: a page by its filters and cursor, and every page in turn. */
import type { CriblineClient, RequestOptions } from "./index.js";

export interface Page<T> {
  data: T[];
  /** Opaque: send it back as it is; null on the last page. */
  cursor: string | null;
}

export type PageOptions = RequestOptions & { limit?: number; cursor?: string | null };

/** One page of the list at `path`: the filters, and the cursor of the previous page (none for the first). */
export function pageAt<T>(client: CriblineClient, path: string, filters: object, options: PageOptions): Promise<Page<T>> {
  const query = new URLSearchParams();
  for (const [name, value] of Object.entries(filters as Record<string, unknown>)) if (value !== undefined) query.set(name, String(value));
  if (options.limit !== undefined) query.set("limit", String(options.limit));
  if (options.cursor != null) query.set("cursor", options.cursor);
  const search = query.toString();
  return client.request("GET", `${path}${search === "" ? "" : `?${search}`}`, undefined, options) as Promise<Page<T>>;
}

/** Every page in turn, each read by `page` after the cursor of the one before, until the cursor is null. */
export async function* pagesOf<T>(page: (cursor: string | null) => Promise<Page<T>>): AsyncGenerator<Page<T>> {
  let cursor: string | null = null;
  do {
    const next: Page<T> = await page(cursor);
    yield next;
    cursor = next.cursor;
  } while (cursor !== null);
}
