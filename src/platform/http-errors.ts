/**
 * The one renderer: every error that leaves cribline goes through here as problem+json.
 * Errors of the framework (body parsing, body size, media type) are translated to cribline's
 * codes; anything else is a 500 that says nothing of the internals and is logged in full.
 */
import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { ApiError } from "./errors.js";
import { ERRORS } from "./error-codes.js";
import { headerCount } from "./headers.js";
import { PROBLEM_CONTENT_TYPE, type ProblemBody } from "./problem.js";
import { maskSecrets } from "./secrets.js";

/**
 * Framework errors in cribline's terms: every 4xx keeps its meaning, none becomes a 500.
 * `bodyLimit` is the largest body in bytes the request may send: its route's, or before
 * routing the server's (Fastify's `routeOptions.bodyLimit` gives either).
 */
function fromFramework(error: FastifyError, bodyLimit: number): ApiError | undefined {
  switch (error.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new ApiError("payload_too_large", `the request body is larger than ${bodyLimit} bytes, the most this endpoint accepts`);
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return new ApiError("unsupported_media_type", "send the body as JSON with Content-Type: application/json");
    case "FST_ERR_CTP_INVALID_JSON_BODY":
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return new ApiError("invalid_body", "the request body is not valid JSON");
    case "FST_ERR_BAD_URL":
      return new ApiError("bad_request", "the request path is not a valid URL (check its percent-encoding)");
    case "FST_ERR_MAX_PARAM_LENGTH":
      return new ApiError("not_found", "no such resource: the path is too long");
    default:
      break;
  }
  if (error instanceof SyntaxError) return new ApiError("invalid_body", "the request body is not valid JSON");
  const status = error.statusCode ?? 500;
  return status >= 400 && status < 500 ? new ApiError("bad_request", "the request could not be processed as sent") : undefined;
}

/**
 * The problem an error is answered with. Its text is masked (secrets.ts) here, where it leaves
 * the process: a detail may echo a path, an id or a parameter that holds a whole key.
 */
export function toProblem(error: ApiError): ProblemBody {
  const { status, title } = ERRORS[error.code];
  const { param, errors, ids } = error.extras;
  return {
    type: "about:blank",
    status,
    title,
    detail: maskSecrets(error.detail),
    code: error.code,
    ...(param === undefined ? {} : { param: maskSecrets(param) }),
    ...(errors === undefined
      ? {}
      : { errors: errors.map((e) => ({ index: e.index, field: maskSecrets(e.field), message: maskSecrets(e.message) })) }),
    ...(ids === undefined ? {} : { ids: ids.map(maskSecrets) }),
  };
}

export function sendProblem(reply: FastifyReply, error: ApiError): FastifyReply {
  return reply.code(error.status).headers(error.headers).type(PROBLEM_CONTENT_TYPE).send(toProblem(error));
}

/** Fastify's router errors (a URL it cannot decode, a path segment too long), as problems. */
export function frameworkErrors(error: FastifyError, request: FastifyRequest, reply: FastifyReply): void {
  reply.header("x-request-id", request.id);
  void sendProblem(
    reply,
    fromFramework(error, request.routeOptions.bodyLimit) ?? new ApiError("bad_request", "the request could not be processed as sent"),
  );
}

/**
 * `unavailable` tells errors of a database that is out of reach for now (down, cut off, busy,
 * a statement over its time limit) from bugs: those are a 503 the client may retry.
 */
export function installErrorHandling(app: FastifyInstance, unavailable: (error: unknown) => boolean): void {
  app.setErrorHandler((error: FastifyError, request: FastifyRequest, reply: FastifyReply) => {
    const known =
      error instanceof ApiError
        ? error
        : unavailable(error)
          ? new ApiError("service_unavailable", "the database is not available right now; retry shortly", {}, { "retry-after": "1" })
          : fromFramework(error, request.routeOptions.bodyLimit);
    if (known !== undefined) {
      if (known.status >= 500) request.log.error({ err: error }, "request failed");
      return sendProblem(reply, known);
    }
    request.log.error({ err: error }, "unexpected error");
    return sendProblem(
      reply,
      new ApiError("internal_error", "something went wrong on our side; quote the x-request-id header when reporting it"),
    );
  });
  app.setNotFoundHandler((request, reply) =>
    sendProblem(reply, new ApiError("not_found", `no such endpoint: ${request.method} ${request.url.split("?")[0]}`)),
  );
}

/**
 * Requests Node's HTTP parser refuses before Fastify sees them (a request line or headers
 * over the size limit, malformed HTTP) still get a problem+json answer.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === "ECONNRESET" || !socket.writable) {
    socket.destroy();
    return;
  }
  writeProblem(
    socket,
    error.code === "HPE_HEADER_OVERFLOW"
      ? new ApiError("headers_too_large", "the request line or headers are too large; a URL must stay under 16 KiB")
      : new ApiError("bad_request", "the request is not valid HTTP"),
  );
}

/** A problem+json answer written on the socket itself, which is then closed: for what never reaches a route. */
function writeProblem(socket: Socket, error: ApiError, headers: Record<string, string> = {}): void {
  const problem = toProblem(error);
  const body = JSON.stringify(problem);
  const extra = Object.entries({ ...error.headers, ...headers })
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join("");
  socket.end(
    `HTTP/1.1 ${problem.status} ${problem.title}\r\nContent-Type: ${PROBLEM_CONTENT_TYPE}\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nX-Request-Id: ${randomUUID()}\r\n${extra}Connection: close\r\n\r\n${body}`,
  );
}

/**
 * What Node's HTTP server answers itself, or not at all, answered in the problem format: a
 * request without `Host` (HTTP/1.1 requires one; the server is made not to refuse it bare, see
 * app.ts), an `Expect` other than `100-continue` (417), and `CONNECT` (cribline is no proxy).
 * Node takes the first of several `Authorization` headers; such a request is refused here.
 */
export function installServerAnswers(app: FastifyInstance): void {
  app.addHook("onRequest", async (request) => {
    // HTTP/1.0 has no Host requirement (health probes still send such requests).
    if (request.raw.httpVersion !== "1.0" && (request.headers.host === undefined || request.headers.host === "")) {
      throw new ApiError("bad_request", "the request has no Host header, which HTTP/1.1 requires");
    }
    // Node keeps the first of several and drops the rest: which one the client meant is unknowable.
    if (headerCount(request.raw, "authorization") > 1) {
      throw new ApiError("bad_request", "the request has more than one Authorization header: send one, Authorization: Bearer <API key>");
    }
  });
  app.server.on("checkExpectation", (request: IncomingMessage, response: ServerResponse) => {
    const problem = toProblem(
      new ApiError("expectation_failed", `Expect: ${String(request.headers.expect).slice(0, 100)} is not supported; only 100-continue is`),
    );
    const body = JSON.stringify(problem);
    response.writeHead(problem.status, {
      "content-type": PROBLEM_CONTENT_TYPE,
      "content-length": Buffer.byteLength(body),
      "x-request-id": randomUUID(),
      connection: "close",
    });
    response.end(body);
  });
  app.server.on("connect", (_request: IncomingMessage, socket: Socket) => {
    writeProblem(socket, new ApiError("method_not_allowed", "CONNECT is not supported: cribline is not a proxy"), { Allow: "" });
  });
}
