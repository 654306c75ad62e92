/**
 * The buckets that tile a range of event dates: each the largest that fits where it starts, so
 * that a wide range takes few buckets. A bucket of late rows is an index range in createdAt
 * order, so each is one arm of a page's merge (window/statement.ts).
 */
import { bucketAt, bucketStart, EDGE_LEVEL, FANOUT, type Level } from "./buckets.js";

/** One bucket of a tiling; an edge lies only partly in the range, so its arm checks the event date. */
export interface Tile {
  level: Level;
  bucket: number;
  edge: boolean;
}

const TOP: Level = 3;

/**
 * The tiles of the event dates from `low` to `high` (inclusive, ms). A bucket may reach past
 * them into `outer`, a wider range known to hold no late row outside `low` to `high` (beyond
 * the tenant's late rows), and is then no edge. Stops once past `most` tiles, so that a caller
 * that takes no more learns that there are more.
 */
export function tiles(low: number, high: number, outer: readonly [number, number] = [low, high], most = Infinity): Tile[] {
  if (high < low) return [];
  const [outerLow, outerHigh] = outer;
  const fits = (level: Level, bucket: number) => bucketStart(level, bucket) >= outerLow && bucketStart(level, bucket + 1) - 1 <= outerHigh;
  // Counted in edge-level buckets (`unit`); a bucket of `level` spans FANOUT ** (level - EDGE_LEVEL) of them.
  const first = bucketAt(EDGE_LEVEL, low);
  const last = bucketAt(EDGE_LEVEL, high);
  if (first === last) return [{ level: EDGE_LEVEL, bucket: first, edge: !fits(EDGE_LEVEL, first) }];
  const out: Tile[] = [];
  let unit = first;
  let end = last;
  if (!fits(EDGE_LEVEL, first)) {
    out.push({ level: EDGE_LEVEL, bucket: first, edge: true });
    unit += 1;
  }
  if (!fits(EDGE_LEVEL, last)) {
    out.push({ level: EDGE_LEVEL, bucket: last, edge: true });
    end -= 1;
  }
  // A bucket may start before `unit` only where no tile lies before it, and end after `end` only where none lies after.
  const ceiling = end === last ? Infinity : end;
  while (unit <= end && out.length <= most) {
    let level = TOP;
    for (; level > EDGE_LEVEL; level -= 1) {
      const size = FANOUT ** (level - EDGE_LEVEL);
      const bucket = Math.floor(unit / size);
      if ((bucket * size === unit || unit === first) && (bucket + 1) * size - 1 <= ceiling && fits(level, bucket)) break;
    }
    const size = FANOUT ** (level - EDGE_LEVEL);
    const bucket = Math.floor(unit / size);
    out.push({ level, bucket, edge: false });
    unit = (bucket + 1) * size;
  }
  return out;
}
