/**
 * Builds the whole HTTP application without listening: tests and the runtime (runtime.ts)
 * both use it. Everything it needs comes in as arguments.
 */
import { randomUUID } from "node:crypto";
import Fastify, { LogController, type FastifyInstance } from "fastify";
import type { TypeBoxTypeProvider } from "@fastify/type-provider-typebox";
import { COLLECTIONS } from "./collections/registry.js";
import { registerDocs } from "./docs/docs.routes.js";
import { registerConsole } from "./console/console.routes.js";
import { registerEventRoutes } from "./events/event.routes.js";
import { registerUsageRoutes } from "./usage/usage.routes.js";
import { registerHealthRoutes } from "./health.routes.js";
import { registerListRoutes } from "./lists/list.routes.js";
import type { Config } from "./platform/config.js";
import type { CursorCodec } from "./platform/cursor.js";
import { clientErrorHandler, frameworkErrors, installErrorHandling, installServerAnswers } from "./platform/http-errors.js";
import { installJsonBodyParser } from "./platform/json-body.js";
import { Problem } from "./platform/problem.js";
import { RouteBook } from "./platform/route-book.js";
import { carriesSecret, maskSecrets } from "./platform/secrets.js";
import type { Storage } from "./storage/storage.js";
import { registerSyncRoutes } from "./sync/sync.routes.js";
import { openRateStore, type RateStore } from "./platform/rate-limit.js";
import { installMetrics } from "./metrics/metrics.hooks.js";
import { installAuth } from "./tenants/auth.hooks.js";
import { installRateLimits } from "./tenants/rate-limit.hooks.js";
import { registerKeyRoutes } from "./tenants/key.routes.js";
import { KeyUsage } from "./tenants/key-usage.js";
import { registerWebhookRoutes } from "./webhooks/admin/webhook.routes.js";
import type { Resolver } from "./webhooks/admin/endpoint-url.js";
import type { Ingestion } from "./webhooks/delivery/ingestion.js";

export interface AppDeps {
  config: Config;
  storage: Storage;
  cursors: CursorCodec;
  /** Milliseconds since the epoch; createdAt and updatedAt come from it. */
  clock?: () => number;
  /** Called when a sync has committed webhook deliveries: this process's loop sends them now. */
  deliveriesQueued?: () => void;
  /** Counts the sync requests under way, which this process's delivery loop gives way to. */
  ingestion?: Ingestion;
  /** How often keys' last use is written (tenants/key-usage.ts); tests shorten it. */
  keyUsageFlushMs?: number;
  /** How webhook endpoint names are resolved when registered (tests give their own); the system's by default. */
  resolveHost?: Resolver;
  /** Where requests are counted against rate limits; by default the store the configuration names (platform/rate-limit.ts), closed with the app. */
  rateStore?: RateStore;
}

const PRETTY_LOGS = { target: "pino-pretty", options: { translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname", singleLine: true } };

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * What a request's log line says of its URL: the path and the names of the query parameters,
 * in order, without their values, which hold cursors and what clients search for (names).
 * Any key or webhook secret in them is masked: a client may put a whole key in a path.
 */
function pathAndParams(url: string): { path: string; params?: string[] } {
  const mark = url.indexOf("?");
  if (mark < 0) return { path: maskSecrets(url) };
  const params = url
    .slice(mark + 1)
    .split("&")
    .filter((pair) => pair !== "")
    .map((pair) => maskSecrets(pair.split("=", 1)[0] ?? ""));
  return { path: maskSecrets(url.slice(0, mark)), params };
}

export async function buildApp(deps: AppDeps): Promise<FastifyInstance> {
  const app = Fastify({
    // Readable lines for a person at a terminal; JSON, one object a line, for everything else.
    logger: { level: deps.config.logLevel, ...(process.stdout.isTTY ? { transport: PRETTY_LOGS } : {}) },
    // A caller's request id is kept when it is safe to log (and holds no secret); otherwise cribline makes one.
    genReqId: (req) => {
      const given = req.headers["x-request-id"];
      return typeof given === "string" && REQUEST_ID.test(given) && !carriesSecret(given) ? given : randomUUID();
    },
    bodyLimit: deps.config.syncBodyLimit,
    // A request that comes on an open connection while the server closes is answered as any
    // other, with Connection: close (not a bare 503 outside the problem format).
    return503OnClosing: false,
    // One log line per request, written when it is answered (below), not two.
    logController: new LogController({ disableRequestLogging: true }),
    clientErrorHandler,
    // A request without Host reaches the app, which answers it in the problem format (installServerAnswers).
    http: { requireHostHeader: false },
    frameworkErrors,
    // Long enough for any id a client may try on a transaction list, which answers 405.
    routerOptions: { maxParamLength: 1024 },
    // The response serializer checks union branches with its own Ajv; it needs to know
    // cribline's custom format (validation itself is done with TypeBox, see below).
    serializerOpts: { ajv: { formats: { text: true } } },
  }).withTypeProvider<TypeBoxTypeProvider>();

  // cribline validates requests itself (strictly: unknown, repeated and empty parameters are
  // refused with exact error codes) from the same TypeBox schemas; route schemas feed the
  // response serializer and the OpenAPI document, so Ajv's coercing validator is switched off.
  app.setValidatorCompiler(() => () => true);
  app.addHook("onRequest", async (request, reply) => {
    reply.header("x-request-id", request.id);
  });
  app.addHook("onResponse", async (request, reply) => {
    request.log.info(
      { method: request.method, ...pathAndParams(request.url), status: reply.statusCode, ms: Math.round(reply.elapsedTime * 10) / 10 },
      "request",
    );
  });
  installErrorHandling(app, (error) => deps.storage.isUnavailable(error));
  // Only JSON bodies, in UTF-8: anything else is 415, not a string for the handler to puzzle over.
  app.removeContentTypeParser("text/plain");
  installJsonBodyParser(app);

  app.addSchema(Problem);
  for (const collection of COLLECTIONS) {
    app.addSchema(collection.item);
    app.addSchema(collection.input);
  }
  // Both book every route registered after them: the table of routes, and the key checks
  // of the routes that declare a scope.
  const routes = new RouteBook(app);
  app.decorate("routeBook", routes);
  const { storage, cursors, config } = deps;
  const { db } = storage;
  const clock = deps.clock ?? Date.now;
  const rateStore =
    deps.rateStore ??
    (await openRateStore(config.rateLimits, {
      warn: (message) => app.log.warn(message),
      info: (message) => app.log.info(message),
    }));
  // Before the key checks (installAuth): a request is counted before any database work.
  installRateLimits(app, db, rateStore, config.rateLimits);
  // After the count, so that a request without Host is counted and its 400 carries the RateLimit fields.
  installServerAnswers(app);
  installAuth(app, db);
  if (config.metrics !== undefined) installMetrics(app, storage);
  const keyUsage = new KeyUsage(
    db,
    (error) => app.log.warn({ err: error }, "could not record when API keys were last used"),
    deps.keyUsageFlushMs,
  );
  app.addHook("onResponse", async (request, reply) => {
    const keyHash = request.principal?.keyHash ?? request.keyHash;
    if (keyHash !== null && reply.statusCode < 400) keyUsage.used(keyHash, Date.now());
  });
  app.addHook("onClose", async () => keyUsage.flush());
  await registerDocs(app);
  await registerConsole(app);
  registerHealthRoutes(app, storage);
  registerListRoutes(app, { db, cursors });
  registerEventRoutes(app, { db, cursors, clock, keepDays: config.eventRetentionDays });
  registerUsageRoutes(app, { db, cursors });
  registerSyncRoutes(app, { db, clock, deliveriesQueued: deps.deliveriesQueued, ingestion: deps.ingestion });
  registerWebhookRoutes(app, { db, cursors, clock, allowPrivate: config.webhooksAllowPrivate, resolveHost: deps.resolveHost });
  registerKeyRoutes(app, { db, cursors, clock });
  routes.refuseOtherMethods(app);
  return app;
}
