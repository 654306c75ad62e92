/** What every page of the console shares: errors shown with their detail, paging both ways, tables, times in the tenant's zone. */
import type { ComponentChildren } from "preact";
import { useEffect, useState } from "preact/hooks";
import { formatInZone, instantOfLocal } from "../../src/platform/zone.ts";
import { ApiError, type Page } from "./api.ts";

export function ErrorNote({ error }: { error: unknown }) {
  if (error === undefined || error === null) return null;
  const text = error instanceof ApiError ? `${error.detail} (${error.code})` : error instanceof Error ? error.message : String(error);
  return (
    <p class="error" role="alert">
      {text}
    </p>
  );
}

/** A time the API gave, as the tenant's zone writes it. */
export function inZone(zone: string, iso: string | null | undefined): string {
  if (iso === null || iso === undefined) return "";
  return formatInZone(zone, Date.parse(iso)).replace("T", " ");
}

/** A `datetime-local` value, read as a wall time of the zone, as an RFC 3339 instant; "" when empty. */
export function fromLocal(zone: string, value: string): string {
  if (value === "") return "";
  return new Date(instantOfLocal(zone, Date.parse(`${value.length === 16 ? `${value}:00` : value}Z`))).toISOString();
}

export interface Paged<T> {
  page: Page<T> | undefined;
  error: unknown;
  loading: boolean;
  /** Which page this is, from 1. */
  number: number;
  next(): void;
  previous(): void;
}

/**
 * The pages of a list read with `load(cursor)`: forward with the cursor of the page shown,
 * back through the cursors already used. New `key` (other filters): back to the first page.
 */
export function usePaged<T>(key: string, load: (cursor: string | null) => Promise<Page<T>>): Paged<T> {
  const [walk, setWalk] = useState<{ key: string; stack: (string | null)[] }>({ key, stack: [null] });
  const [page, setPage] = useState<Page<T>>();
  const [error, setError] = useState<unknown>();
  const [loading, setLoading] = useState(false);
  // Other filters start at their first page, also when they are the ones walked before.
  useEffect(() => {
    if (walk.key !== key) setWalk({ key, stack: [null] });
  }, [key]);
  const stack = walk.key === key ? walk.stack : [null];
  const cursor = stack[stack.length - 1] ?? null;
  useEffect(() => {
    let current = true;
    setLoading(true);
    setError(undefined);
    load(cursor)
      .then((got) => current && setPage(got))
      .catch((failure: unknown) => {
        if (current) {
          setError(failure);
          setPage(undefined);
        }
      })
      .finally(() => current && setLoading(false));
    return () => {
      current = false;
    };
  }, [key, cursor]);
  return {
    page,
    error,
    loading,
    number: stack.length,
    next: () => page?.cursor && setWalk({ key, stack: [...stack, page.cursor] }),
    previous: () => stack.length > 1 && setWalk({ key, stack: stack.slice(0, -1) }),
  };
}

export function Pager({ paged, label }: { paged: Paged<unknown>; label: string }) {
  return (
    <nav class="pager" aria-label={`${label} pages`}>
      <button type="button" onClick={paged.previous} disabled={paged.number === 1 || paged.loading}>
        Previous
      </button>
      <span aria-live="polite">Page {paged.number}</span>
      <button type="button" onClick={paged.next} disabled={!paged.page?.cursor || paged.loading}>
        Next
      </button>
    </nav>
  );
}

export interface Column<T> {
  label: string;
  value(row: T): ComponentChildren;
}

/** A table of rows; while `busy` (its rows on their way) it says so, and shows no stale rows. */
export function Table<T>({
  caption,
  columns,
  rows,
  onOpen,
  busy = false,
}: {
  caption: string;
  columns: Column<T>[];
  rows: T[];
  onOpen?: (row: T) => void;
  busy?: boolean;
}) {
  return (
    <div class="table-wrap" tabIndex={0} role="region" aria-label={`${caption} (scrolls)`}>
      <table aria-busy={busy}>
        <caption>{caption}</caption>
        <thead>
          <tr>
            {columns.map((c) => (
              <th scope="col" key={c.label}>
                {c.label}
              </th>
            ))}
            {onOpen && (
              <th scope="col">
                <span class="visually-hidden">Details</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {(busy || rows.length === 0) && (
            <tr>
              <td colSpan={columns.length + (onOpen ? 1 : 0)}>{busy ? "Loading…" : "Nothing here."}</td>
            </tr>
          )}
          {(busy ? [] : rows).map((row, i) => (
            <tr key={i}>
              {columns.map((c) => (
                <td key={c.label}>{c.value(row)}</td>
              ))}
              {onOpen && (
                <td>
                  <button type="button" class="link" onClick={() => onOpen(row)}>
                    Details
                  </button>
                </td>
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A labelled control: every input of the console has its label. */
export function Field({ label, children, hint }: { label: string; children: ComponentChildren; hint?: string }) {
  return (
    <label class="field">
      <span>{label}</span>
      {children}
      {hint && <small>{hint}</small>}
    </label>
  );
}

/** A record or answer whole, field by field. */
export function Details({ title, value, onClose }: { title: string; value: object; onClose: () => void }) {
  return (
    <section class="details" aria-label={title}>
      <h2>{title}</h2>
      <dl>
        {Object.entries(value).map(([name, v]) => (
          <div key={name}>
            <dt>{name}</dt>
            <dd>{typeof v === "object" && v !== null ? JSON.stringify(v) : String(v)}</dd>
          </div>
        ))}
      </dl>
      <button type="button" onClick={onClose}>
        Close
      </button>
    </section>
  );
}
