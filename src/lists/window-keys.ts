/**
 * The keys of a time window in name order, kept by a process for the later pages of a walk:
 * the ids and names of the window's rows in the page's name range, in name order, as of the
 * tenant's newest createdAt when they were read. A page then reads the rows of the next ids
 * by primary key, and the rows of the window stored since by their createdAt (list.repository.ts,
 * keysPage), about what a page of the name alone costs, where each page read the whole window,
 * or the name index's entries of many other dates. Right however old: transactions
 * never change and are never deleted, and createdAt rises in the order rows commit, so the keys
 * and the rows stored since are every row of the window, each once. A list's keys are read again
 * once KEYS_FRESH_MS old, so that the rows stored since stay few.
 */
import type { CursorPosition } from "../platform/cursor.js";

export interface WindowKeys {
  /** The tenant's newest createdAt in the list when the keys were read; every row stored since has a later one. */
  newest: number;
  names: string[];
  ids: string[];
  /** When the keys were read (Date.now()). */
  readAt: number;
}

/** How long a process keeps a window's keys: the rows stored since are read on every page. */
export const KEYS_FRESH_MS = 10_000;
/**
 * The most late rows a tenant may have stored since a window's keys were read for a page to read
 * from them: each page reads every one (keysPage), where more is a bulk load under way.
 */
export const KEYS_LATE_BOUND = 1_000;
/** The most keys a process keeps, over all windows: about 100 bytes each. */
const KEYS_BUDGET = 200_000;

/** Windows' keys by walk (the key hash, list, window and name range), the oldest forgotten first within `budget` keys. */
export class KeyLists {
  private readonly lists = new Map<string, WindowKeys>();
  private total = 0;

  constructor(private readonly budget = KEYS_BUDGET) {}

  get(walk: string, now: number): WindowKeys | undefined {
    const keys = this.lists.get(walk);
    if (keys !== undefined && now - keys.readAt >= KEYS_FRESH_MS) {
      this.delete(walk);
      return undefined;
    }
    return keys;
  }

  set(walk: string, keys: WindowKeys): void {
    this.delete(walk);
    if (keys.ids.length > this.budget) return;
    for (const [oldest] of this.lists) {
      if (this.total + keys.ids.length <= this.budget) break;
      this.delete(oldest);
    }
    this.lists.set(walk, keys);
    this.total += keys.ids.length;
  }

  delete(walk: string): void {
    const keys = this.lists.get(walk);
    if (keys === undefined) return;
    this.lists.delete(walk);
    this.total -= keys.ids.length;
  }
}

export const windowKeys = new KeyLists();

/**
 * Up to `take` ids that follow `after` in the keys' order. The database orders the keys by code
 * point (storage/engine.ts, sortKeyType); JavaScript's `<` compares UTF-16 code units, which
 * order the code points past U+FFFF before U+E000 to U+FFFF.
 */
export function idsAfter(keys: WindowKeys, after: CursorPosition, take: number): string[] {
  const key = String(after.key);
  let [low, high] = [0, keys.ids.length];
  while (low < high) {
    const middle = (low + high) >> 1;
    const order = compareCodePoints(keys.names[middle] ?? "", key) || compareCodePoints(keys.ids[middle] ?? "", after.id);
    if (order <= 0) low = middle + 1;
    else high = middle;
  }
  return keys.ids.slice(low, low + take);
}

export function compareCodePoints(a: string, b: string): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i += 1) {
    const x = a.charCodeAt(i);
    const y = b.charCodeAt(i);
    if (x !== y) return codePointRank(x) - codePointRank(y);
  }
  return a.length - b.length;
}

/** A UTF-16 code unit's rank in code-point order: surrogates (U+D800 to U+DFFF) after U+FFFF. */
function codePointRank(unit: number): number {
  if (unit >= 0xd800 && unit <= 0xdfff) return unit + 0x2000;
  return unit >= 0xe000 ? unit - 0x800 : unit;
}
