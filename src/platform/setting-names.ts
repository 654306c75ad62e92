/**
 * The names of cribline's CRIBLINE_* settings, to tell an operator about a variable that
 * looks like one and is not (a misspelling is otherwise silently ignored).
 */
import { SETTINGS, type Setting } from "./config.js";

type ServerSetting = Extract<Setting, `CRIBLINE_${string}`>;

/** Every CRIBLINE_* setting the server reads (config.ts's list): the README's settings table. */
export const SERVER_SETTINGS: readonly ServerSetting[] = SETTINGS.filter((name): name is ServerSetting => name.startsWith("CRIBLINE_"));

/**
 * CRIBLINE_* variables that other programs of this repository read, so an environment shared
 * with them is not warned about: the client's export command, the webhook example, the tests.
 */
export const OTHER_PROGRAMS_SETTINGS = [
  "CRIBLINE_API_KEY",
  "CRIBLINE_BASE_URL",
  "CRIBLINE_API_URL",
  "CRIBLINE_WEBHOOK_SECRET",
  "CRIBLINE_TEST_REQUIRE_POSTGRES",
] as const;

const KNOWN: readonly string[] = [...SERVER_SETTINGS, ...OTHER_PROGRAMS_SETTINGS];

/**
 * Optimal string alignment distance: the fewest letters added, removed or replaced, or pairs
 * of neighbours swapped, to turn `a` into `b` (a swap is the commonest slip in typing a name).
 */
function editDistance(a: string, b: string): number {
  // rows[i][j]: the distance between the first i letters of a and the first j of b.
  const rows = [Array.from({ length: b.length + 1 }, (_, j) => j)];
  for (let i = 1; i <= a.length; i += 1) {
    const above = rows[i - 1] ?? [];
    const row = [i];
    for (let j = 1; j <= b.length; j += 1) {
      let best = Math.min((above[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1), (above[j] ?? 0) + 1, (row[j - 1] ?? 0) + 1);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, (rows[i - 2]?.[j - 2] ?? 0) + 1);
      row.push(best);
    }
    rows.push(row);
  }
  return rows[a.length]?.[b.length] ?? 0;
}

/**
 * The known name `name` was most likely meant to be (letter case aside): the nearest, if it is
 * at most 3 edits away and at most a third of the part after CRIBLINE_; otherwise none, as a
 * far name would only mislead.
 */
function closestKnown(name: string): string | undefined {
  const upper = name.toUpperCase();
  const within = Math.min(3, Math.floor((upper.length - "CRIBLINE_".length) / 3));
  let best: { name: string; distance: number } | undefined;
  for (const known of KNOWN) {
    const distance = editDistance(upper, known);
    if (distance <= within && (best === undefined || distance < best.distance)) best = { name: known, distance };
  }
  return best?.name;
}

/**
 * A warning for each variable whose name starts with CRIBLINE_ (in any letter case) and is
 * no setting, naming the known name it is close to, if any; in name order.
 */
export function unknownSettingWarnings(env: NodeJS.ProcessEnv): string[] {
  return Object.keys(env)
    .filter((name) => name.toUpperCase().startsWith("CRIBLINE_") && !KNOWN.includes(name))
    .sort()
    .map((name) => {
      const closest = closestKnown(name);
      return `${name} is not a cribline setting and is ignored${closest === undefined ? "" : `; did you mean ${closest}?`}`;
    });
}
