/**
 * The retry policy on its own (src/webhooks/delivery/retry-policy.ts): what an attempt means
 * for its delivery, and when the next one is due. Pure functions: no server, no database.
 * The delivery tests check the same schedule end to end against a real receiver.
 */
import { describe, expect, it } from "vitest";
import {
  disablesEndpoint,
  isSuccess,
  judge,
  MAX_RETRY_AFTER_MS,
  nextAttemptAt,
  RETRY_DELAYS_MS,
} from "../src/webhooks/delivery/retry-policy.js";

const HOUR = 3_600_000;
const now = Date.UTC(2026, 10, 25, 12);
const middle = () => 0.5;

describe("retry policy", () => {
  it("waits about three days in all over nine retries, each longer than the last", () => {
    expect(RETRY_DELAYS_MS).toHaveLength(9);
    expect(RETRY_DELAYS_MS[0]).toBe(5000);
    for (let i = 1; i < RETRY_DELAYS_MS.length; i += 1) expect(RETRY_DELAYS_MS[i]!).toBeGreaterThan(RETRY_DELAYS_MS[i - 1]!);
    const total = RETRY_DELAYS_MS.reduce((sum, delay) => sum + delay, 0);
    expect(total / HOUR).toBeCloseTo(75.6, 1);
  });

  it("counts only 2xx as success", () => {
    for (const status of [200, 201, 204, 299]) expect(isSuccess(status), String(status)).toBe(true);
    for (const status of [undefined, null, 100, 199, 300, 301, 400, 410, 429, 500, 503])
      expect(isSuccess(status), String(status)).toBe(false);
  });

  it("disables the endpoint on 410 Gone only", () => {
    expect(disablesEndpoint({ status: 410 })).toBe(true);
    for (const status of [undefined, 200, 404, 500]) expect(disablesEndpoint({ status })).toBe(false);
  });

  it("schedules the n-th retry after the n-th delay, with ±20 % jitter", () => {
    RETRY_DELAYS_MS.forEach((delay, i) => {
      const attempts = i + 1;
      expect(nextAttemptAt(attempts, now, {}, middle)).toBe(now + delay);
      expect(nextAttemptAt(attempts, now, {}, () => 0)).toBe(now + Math.round(delay * 0.8));
      expect(nextAttemptAt(attempts, now, {}, () => 0.999999)).toBeLessThanOrEqual(now + Math.round(delay * 1.2));
    });
  });

  it("has no retry after the last one", () => {
    expect(nextAttemptAt(RETRY_DELAYS_MS.length + 1, now, {}, middle)).toBeUndefined();
  });

  it("waits as long as Retry-After asks when that is longer, up to a day", () => {
    expect(nextAttemptAt(1, now, { retryAfterSeconds: 60 }, middle)).toBe(now + 60_000);
    expect(nextAttemptAt(1, now, { retryAfterSeconds: 1 }, middle)).toBe(now + 5000);
    expect(nextAttemptAt(1, now, { retryAfterSeconds: 10 * 24 * 3600 }, middle)).toBe(now + MAX_RETRY_AFTER_MS);
    expect(MAX_RETRY_AFTER_MS).toBe(24 * HOUR);
  });

  it("judges an attempt: succeeded, pending with its next time, or failed", () => {
    expect(judge(1, now, { status: 204 }, false, middle)).toEqual({ status: "succeeded", next: null });
    expect(judge(1, now, { status: 500 }, false, middle)).toEqual({ status: "pending", next: now + 5000 });
    expect(judge(1, now, {}, false, middle)).toEqual({ status: "pending", next: now + 5000 });
    expect(judge(RETRY_DELAYS_MS.length + 1, now, { status: 500 }, false, middle)).toEqual({ status: "failed", next: null });
    expect(judge(1, now, { status: 410 }, false, middle)).toEqual({ status: "failed", next: null });
  });

  it("fails at once what no later attempt could deliver (its endpoint or message gone), but not a success", () => {
    expect(judge(1, now, {}, true, middle)).toEqual({ status: "failed", next: null });
    expect(judge(1, now, { status: 200 }, true, middle)).toEqual({ status: "succeeded", next: null });
  });
});
