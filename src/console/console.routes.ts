/**
 * /console: the tenant console, the static build of console/ (`npm run build`, Vite), served by
 * the API's own process. Every answer under it carries a Content Security Policy that lets the
 * console's own scripts, styles and API calls run and nothing else: no inline script or style,
 * no other origin, no framing. The console keeps the API key in the tab's memory.
 */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance } from "fastify";
import { ApiError } from "../platform/errors.js";

const BUILD = fileURLToPath(new URL("../../console/dist/", import.meta.url));

export const CONSOLE_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join("; ");

export async function registerConsole(app: FastifyInstance): Promise<void> {
  const built = existsSync(join(BUILD, "index.html"));
  await app.register(async (scope) => {
    scope.addHook("onSend", async (_request, reply, payload) => {
      reply.header("content-security-policy", CONSOLE_POLICY);
      reply.header("x-frame-options", "DENY");
      reply.header("x-content-type-options", "nosniff");
      reply.header("referrer-policy", "no-referrer");
      reply.header("cross-origin-opener-policy", "same-origin");
      return payload;
    });
    // Pages, not API operations: none of them is in the OpenAPI document.
    const HIDDEN = { schema: { hide: true } };
    scope.get("/console", HIDDEN, async (_request, reply) => reply.redirect("/console/", 308));
    if (!built) {
      scope.get("/console/*", HIDDEN, async () => {
        throw new ApiError("service_unavailable", "the console is not built: run npm run build");
      });
      return;
    }
    await scope.register(fastifyStatic, {
      root: BUILD,
      prefix: "/console/",
      decorateReply: false,
      wildcard: true,
      index: ["index.html"],
      cacheControl: false,
      // Assets carry their content's hash in their names; the page itself is checked every time.
      setHeaders: (res, path) => {
        res.setHeader("cache-control", path.includes("/assets/") ? "public, max-age=31536000, immutable" : "no-cache");
      },
    });
  });
}
