/** The OpenAPI document (generated from the route schemas) and a readable reference page. */
import { readFileSync } from "node:fs";
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance } from "fastify";

export const OPENAPI_PATH = "/v1/openapi.json";

/** The package's version: the document's and the reference page's. */
export const VERSION: string = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")).version;

/** cribline's name where the framework's logo would be. */
const LOGO = `<svg xmlns="http://www.w3.org/2000/svg" width="160" height="40" viewBox="0 0 160 40"><text x="0" y="29" font-family="Helvetica, Arial, sans-serif" font-size="28" font-weight="700" fill="#ffffff">cribline</text></svg>`;

const DESCRIPTION = `Records of PPE and tool dispensing devices (withdrawals, returns, exchanges), training
records, and the master data around them, per customer tenant.

Lists are read-only and cursor-paged: fetch the first page without \`cursor\`, then send each
response's \`cursor\` until it is \`null\`. Newest first by \`createdAt\` (the moment cribline first
stored a record), ties by \`id\`; ascending by name or code when \`name\` or \`code\` is sent.
\`createdSince\`/\`createdUntil\` (inclusive) match a transaction's event date, and are the way to
reconcile a period that webhooks may have missed. Unknown, repeated or empty parameters are 400.

Every error is \`application/problem+json\` with a stable \`code\`. Every response carries an
\`x-request-id\` header.`;

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"];

/** The rate-limit fields every answer carries, and the 429 every operation may answer (README: "Rate limits"). */
const RATE_LIMIT_HEADERS = {
  "RateLimit-Policy": {
    description:
      'The quota that applies to this request, as the IETF httpapi RateLimit draft writes it: `"read";q=15000;w=10` (the policy: `read`, `sync` or `anonymous`; requests per window; the window in seconds).',
    schema: { type: "string" },
  },
  RateLimit: {
    description: 'Where the quota stands after this request: `"read";r=14990;t=7` (requests left; seconds until the window ends).',
    schema: { type: "string" },
  },
  "Retry-After": { description: "Seconds to wait before the next request.", schema: { type: "integer", minimum: 1 } },
};

type Operation = { responses?: Record<string, { headers?: Record<string, unknown> }> };

/**
 * Adds the answers every operation may give: the rate-limit fields on each, its 429, and the 503
 * of every operation that reads the database (all but /healthz) when the database does not
 * answer in time (README: "Operating it").
 */
function withCommonAnswers(document: Record<string, unknown>): Record<string, unknown> {
  const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });
  // A problem answer that says when to ask again.
  const retryLater = (description: string) =>
    ({
      description,
      headers: { "Retry-After": ref("Retry-After") },
      content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } },
    }) as never;
  const paths = (document.paths ?? {}) as Record<string, Record<string, Operation>>;
  for (const [path, item] of Object.entries(paths)) {
    for (const method of METHODS) {
      const operation = item[method];
      if (operation?.responses === undefined) continue;
      operation.responses["429"] = retryLater(
        "Too many requests: this key's (or, without a valid key, this address's) quota for the window is used up.",
      );
      if (path !== "/healthz")
        operation.responses["503"] = retryLater(
          "Service unavailable (`service_unavailable`): the database is unreachable, busy beyond its limits or too slow; retry after `Retry-After`.",
        );
      for (const response of Object.values(operation.responses)) {
        response.headers = { ...response.headers, "RateLimit-Policy": ref("RateLimit-Policy"), RateLimit: ref("RateLimit") };
      }
    }
  }
  const components = (document.components ?? {}) as Record<string, unknown>;
  return { ...document, components: { ...components, headers: RATE_LIMIT_HEADERS } };
}

export async function registerDocs(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: { title: "cribline API", version: VERSION, description: DESCRIPTION },
      components: {
        securitySchemes: {
          apiKey: {
            type: "http",
            scheme: "bearer",
            description: "An API key `crib_...` with the scope the endpoint needs: read, sync or admin.",
          },
        },
      },
      tags: [
        { name: "Transactions", description: "Read-only lists of what devices and the learning system recorded." },
        { name: "Master data", description: "Employees, cost centers, sectors, products and devices." },
        { name: "Sync", description: "Idempotent, atomic batches from devices and source systems." },
        { name: "Events", description: "Every change of the tenant's records, for polling." },
        { name: "Usage", description: "What each cost center, employee, product, sector and device consumed, per period." },
        { name: "Operations", description: "Health checks." },
        { name: "Webhooks", description: "Endpoints that receive the tenant's events, their attempt log and replays." },
        { name: "API keys", description: "The tenant's own API keys, for keys with the `admin` scope." },
      ],
    },
    transformObject: (document) => withCommonAnswers((document as { openapiObject: Record<string, unknown> }).openapiObject) as never,
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === "string" ? json.$id : `def-${i}`) },
  });
  await app.register(swaggerUi, {
    routePrefix: "/docs",
    // `urls` rather than `url`, which the plugin replaces by its own copy at /docs/json: the page
    // loads, and its bar names, the document clients use.
    uiConfig: { urls: [{ url: OPENAPI_PATH, name: `cribline API ${VERSION}` }], deepLinking: true } as never,
    theme: { title: "cribline API reference" },
    logo: { type: "image/svg+xml", content: LOGO, href: "/docs", target: "_self" },
  });
  app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());
}
