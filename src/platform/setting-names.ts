/**
 * The names of cribline's CRIBLINE_* settings, to tell an operator about a variable that
 * looks like one and is not (a misspelling is otherwise silently ignored).
 */

/** Every CRIBLINE_* setting the server reads: the README's settings table. */
export const SERVER_SETTINGS = [
  "CRIBLINE_CURSOR_SECRET",
  "CRIBLINE_DEMO",
  "CRIBLINE_SYNC_BODY_LIMIT",
  "CRIBLINE_WEBHOOKS_ALLOW_PRIVATE",
  "CRIBLINE_RATE_LIMIT_READ",
  "CRIBLINE_RATE_LIMIT_SYNC",
  "CRIBLINE_RATE_LIMIT_ANONYMOUS",
  "CRIBLINE_RATE_LIMIT_WINDOW_SECONDS",
  "CRIBLINE_REDIS_URL",
  "CRIBLINE_METRICS_PORT",
  "CRIBLINE_METRICS_HOST",
  "CRIBLINE_WEBHOOK_RETENTION_DAYS",
] as const;

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

const KNOWN = new Set<string>([...SERVER_SETTINGS, ...OTHER_PROGRAMS_SETTINGS]);

/** Levenshtein distance: the fewest letters added, removed or replaced to turn `a` into `b`. */
function editDistance(a: string, b: string): number {
  // row[j]: the distance between the first i letters of a and the first j of b.
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i += 1) {
    const next = [i];
    for (let j = 1; j <= b.length; j += 1) {
      const replace = (row[j - 1] ?? 0) + (a[i - 1] === b[j - 1] ? 0 : 1);
      next.push(Math.min(replace, (row[j] ?? 0) + 1, (next[j - 1] ?? 0) + 1));
    }
    row = next;
  }
  return row[b.length] ?? 0;
}

/** The server setting nearest to `name` (letter case aside). */
function closestSetting(name: string): string {
  const upper = name.toUpperCase();
  let best: string = SERVER_SETTINGS[0];
  for (const known of SERVER_SETTINGS) if (editDistance(upper, known) < editDistance(upper, best)) best = known;
  return best;
}

/**
 * A warning for each variable whose name starts with CRIBLINE_ (in any letter case) and is
 * no setting, naming the closest setting; in name order.
 */
export function unknownSettingWarnings(env: NodeJS.ProcessEnv): string[] {
  return Object.keys(env)
    .filter((name) => name.toUpperCase().startsWith("CRIBLINE_") && !KNOWN.has(name))
    .sort()
    .map((name) => `${name} is not a cribline setting and is ignored; did you mean ${closestSetting(name)}?`);
}
