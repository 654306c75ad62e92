/** The client's one error class, apart from sync's (./sync.ts) and webhook verification's. */
import type { components } from "./openapi.js";

export type Problem = components["schemas"]["Problem"];
/** Every error code the API answers with, and the client's own two (no answer in time; no answer at all). */
export type ErrorCode = Problem["code"] | "timeout" | "network_error";

/** Every failure as one class: an answer of the API (its problem), a time limit, or no answer. */
export class CriblineError extends Error {
  override name = "CriblineError";
  constructor(
    /** The HTTP status; 0 when no answer came (sync's refusal before sending is 400, with no requestId). */
    readonly status: number,
    readonly code: ErrorCode,
    readonly detail: string,
    /** The query parameter at fault, when one is. */
    readonly param: string | undefined,
    /** The `x-request-id` of the answer: quote it when reporting a problem. */
    readonly requestId: string | undefined,
    /** Sync: the records at fault, or the ids stored with other content. */
    readonly problem?: Problem,
  ) {
    super(`${status === 0 ? code : `${status} ${code}`}: ${detail}${requestId === undefined ? "" : ` (request ${requestId})`}`);
  }
}
