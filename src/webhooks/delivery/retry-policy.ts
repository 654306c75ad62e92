/**
 * What an attempt means for its delivery: a 2xx succeeds; 410 Gone fails it and disables the
 * endpoint; anything else is tried again after a growing wait, about three days in all, and
 * then fails. Pure: the time and the randomness come in as arguments.
 */
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const HOUR = 60 * MINUTE;

/**
 * Waits before the 2nd, 3rd, ... attempt: 75.6 hours in all, each with ±20 % jitter so that
 * endpoints coming back are not hit by every retry at once.
 */
export const RETRY_DELAYS_MS: readonly number[] = [
  5 * SECOND,
  5 * MINUTE,
  30 * MINUTE,
  2 * HOUR,
  5 * HOUR,
  10 * HOUR,
  14 * HOUR,
  20 * HOUR,
  24 * HOUR,
];

/** The longest wait a receiver's Retry-After may ask for. */
export const MAX_RETRY_AFTER_MS = 24 * HOUR;

/** What came back from one attempt. */
export interface AttemptResult {
  /** The receiver's status, when it answered. */
  status?: number;
  /** Seconds the receiver asked to wait (Retry-After), when it did. */
  retryAfterSeconds?: number;
}

export function isSuccess(status: number | null | undefined): boolean {
  return status !== undefined && status !== null && status >= 200 && status < 300;
}

/** A receiver that answers 410 Gone wants no more events: its endpoint is disabled. */
export function disablesEndpoint(result: AttemptResult): boolean {
  return result.status === 410;
}

/** When the next attempt is due after a failed one (the `attempts`-th), or undefined when it was the last. */
export function nextAttemptAt(attempts: number, now: number, result: AttemptResult, random: () => number): number | undefined {
  const delay = RETRY_DELAYS_MS[attempts - 1];
  if (delay === undefined) return undefined;
  const jittered = Math.round(delay * (0.8 + 0.4 * random()));
  const asked = result.retryAfterSeconds === undefined ? 0 : Math.min(result.retryAfterSeconds * SECOND, MAX_RETRY_AFTER_MS);
  return now + Math.max(jittered, asked);
}

export interface Verdict {
  status: "succeeded" | "failed" | "pending";
  /** When it is tried again: only while pending. */
  next: number | null;
}

/**
 * The delivery's state after its `attempts`-th attempt ended at `at`. `final`: no later attempt
 * could do better (its endpoint or its message is gone), so a failure ends it.
 */
export function judge(attempts: number, at: number, result: AttemptResult, final: boolean, random: () => number): Verdict {
  if (isSuccess(result.status)) return { status: "succeeded", next: null };
  const next = final || disablesEndpoint(result) ? undefined : nextAttemptAt(attempts, at, result, random);
  return next === undefined ? { status: "failed", next: null } : { status: "pending", next };
}
