/**
 * The one closed list of error codes, each with its HTTP status and title: every error that
 * leaves cribline carries one of these codes (errors.ts), rendered as problem.ts says.
 */
export const ERRORS = {
  unknown_parameter: { status: 400, title: "Unknown query parameter" },
  repeated_parameter: { status: 400, title: "Repeated query parameter" },
  empty_parameter: { status: 400, title: "Empty query parameter" },
  missing_parameter: { status: 400, title: "Missing query parameter" },
  invalid_parameter: { status: 400, title: "Invalid query parameter" },
  invalid_limit: { status: 400, title: "Invalid limit" },
  invalid_cursor: { status: 400, title: "Invalid cursor" },
  invalid_time: { status: 400, title: "Invalid date-time" },
  invalid_time_window: { status: 400, title: "Invalid time window" },
  window_with_relationship_filter: { status: 400, title: "Time window combined with a relationship filter" },
  invalid_body: { status: 400, title: "Invalid request body" },
  bad_request: { status: 400, title: "Bad request" },
  invalid_records: { status: 400, title: "Invalid records" },
  invalid_url: { status: 400, title: "Invalid webhook URL" },
  private_address: { status: 400, title: "Private webhook address" },
  unknown_event: { status: 400, title: "Unknown event type" },
  unauthorized: { status: 401, title: "Unauthorized" },
  forbidden: { status: 403, title: "Forbidden" },
  not_found: { status: 404, title: "Not found" },
  method_not_allowed: { status: 405, title: "Method not allowed" },
  conflict: { status: 409, title: "Conflict" },
  expectation_failed: { status: 417, title: "Expectation failed" },
  payload_too_large: { status: 413, title: "Payload too large" },
  unsupported_media_type: { status: 415, title: "Unsupported media type" },
  rate_limited: { status: 429, title: "Too many requests" },
  headers_too_large: { status: 431, title: "Request header fields too large" },
  internal_error: { status: 500, title: "Internal server error" },
  service_unavailable: { status: 503, title: "Service unavailable" },
} as const satisfies Record<string, { status: number; title: string }>;

export type ErrorCode = keyof typeof ERRORS;
