/**
 * Request bodies are JSON in UTF-8, strictly. Node decodes text leniently, turning bytes that
 * are not UTF-8 into U+FFFD: a Latin-1 "João" would be stored as "Jo\uFFFDo", and since a
 * transaction never changes once stored, the device's correct re-send would then be a 409 for
 * good. A body that is not UTF-8 is refused instead, and so is a charset other than UTF-8.
 */
import type { FastifyInstance, FastifyRequest } from "fastify";
import { ApiError } from "./errors.js";
import { jsonFault, lineAndColumn } from "./json-fault.js";

const strictUtf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** `bytes` as text, or undefined when they are not UTF-8. */
export function decodeUtf8(bytes: Uint8Array): string | undefined {
  try {
    return strictUtf8.decode(bytes);
  } catch {
    return undefined;
  }
}

/** The charset a Content-Type names, lower-cased, if any. */
function charsetOf(contentType: string | undefined): string | undefined {
  const match = /;\s*charset\s*=\s*"?([^";\s]+)"?/i.exec(contentType ?? "");
  return match?.[1]?.toLowerCase();
}

/**
 * Parses `application/json` bodies as Fastify does (its own parser, refusing `__proto__` and
 * `constructor` keys), after checking that they are UTF-8.
 */
export function installJsonBodyParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "buffer" }, (request: FastifyRequest, body: Buffer, done) => {
    const charset = charsetOf(request.headers["content-type"]);
    if (charset !== undefined && charset !== "utf-8" && charset !== "utf8") {
      done(new ApiError("unsupported_media_type", `send the body as JSON in UTF-8 (Content-Type: application/json), not ${charset}`));
      return;
    }
    // Many clients send Content-Type: application/json on every request, a bodiless action's
    // too: no bytes is no body, which each route then judges as it would a missing one.
    if (body.length === 0) {
      done(null, undefined);
      return;
    }
    const text = decodeUtf8(body);
    if (text === undefined) {
      done(new ApiError("invalid_body", "the request body is not valid UTF-8: send JSON encoded as UTF-8"));
      return;
    }
    void parseJson(request, text, (error, value) => done(error === null ? null : notJson(text), value));
  });
}

/** Why the parser refused a body: where it stops being JSON, or the keys that are refused in it. */
function notJson(text: string): ApiError {
  const fault = jsonFault(text);
  if (fault === undefined) {
    return new ApiError("invalid_body", 'the request body holds a "__proto__" or "constructor" key, which is refused');
  }
  const found = fault.offset >= text.length ? "the body ends" : `found ${JSON.stringify(text.slice(fault.offset, fault.offset + 1))}`;
  return new ApiError(
    "invalid_body",
    `the request body is not valid JSON: at ${lineAndColumn(text, fault.offset)} (character ${fault.offset + 1}), expected ${fault.expected}; ${found}`,
  );
}
