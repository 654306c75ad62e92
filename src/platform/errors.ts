/**
 * An error that leaves cribline: one of the closed list of codes (error-codes.ts), a detail
 * for a person, and what else the problem carries. It is rendered as `application/problem+json`
 * (RFC 9457), in the shape declared once, as a schema, in problem.ts.
 */
import { ERRORS, type ErrorCode } from "./error-codes.js";
import type { ProblemBody } from "./problem.js";

export { ERRORS, type ErrorCode } from "./error-codes.js";

/** A sync record at fault: its index in `data` and the field. */
export type RecordError = NonNullable<ProblemBody["errors"]>[number];
/** What a problem may carry beyond its status, title and detail. */
export type ProblemExtras = Pick<ProblemBody, "param" | "errors" | "ids">;

export class ApiError extends Error {
  override name = "ApiError";
  constructor(
    readonly code: ErrorCode,
    readonly detail: string,
    readonly extras: ProblemExtras = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(detail);
  }

  get status(): number {
    return ERRORS[this.code].status;
  }
}
