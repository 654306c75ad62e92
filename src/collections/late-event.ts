/**
 * Most records are stored within SLACK_MS of their event date; the few that are not carry
 * that date again in `late_event_at`, so the time window can find them in small indexes by
 * bucket of their event date (lists/window/). SLACK_MS is baked into stored rows: changing it
 * needs a migration that recomputes `late_event_at`. Correctness never depends on it, only speed.
 */
export const SLACK_MS = 60 * 60 * 1000;

/** The value of `late_event_at` for a record with this event date stored at `createdAt`. */
export function lateEventAt(eventAt: number | null, createdAt: number): number | null {
  return eventAt !== null && Math.abs(createdAt - eventAt) > SLACK_MS ? eventAt : null;
}
