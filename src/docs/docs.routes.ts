/** The OpenAPI document (generated from the route schemas) and a readable reference page. */
import swagger from "@fastify/swagger";
import swaggerUi from "@fastify/swagger-ui";
import type { FastifyInstance } from "fastify";

export const OPENAPI_PATH = "/v1/openapi.json";

const DESCRIPTION = `Records of PPE and tool dispensing devices (withdrawals, returns, exchanges), training
records, and the master data around them, per customer tenant.

Lists are read-only and cursor-paged: fetch the first page without \`cursor\`, then send each
response's \`cursor\` until it is \`null\`. Newest first by \`createdAt\` (the moment cribline first
stored a record), ties by \`id\`; ascending by name or code when \`name\` or \`code\` is sent.
\`createdSince\`/\`createdUntil\` (inclusive) match a transaction's event date, and are the way to
reconcile a period that webhooks may have missed. Unknown, repeated or empty parameters are 400.

Every error is \`application/problem+json\` with a stable \`code\`. Every response carries an
\`x-request-id\` header.`;

export async function registerDocs(app: FastifyInstance): Promise<void> {
  await app.register(swagger, {
    openapi: {
      openapi: "3.1.0",
      info: { title: "cribline API", version: "1.0.0", description: DESCRIPTION },
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
        { name: "Operations", description: "Health checks." },
      ],
    },
    refResolver: { buildLocalReference: (json, _baseUri, _fragment, i) => (typeof json.$id === "string" ? json.$id : `def-${i}`) },
  });
  await app.register(swaggerUi, { routePrefix: "/docs", uiConfig: { url: OPENAPI_PATH, deepLinking: true } as never });
  app.get(OPENAPI_PATH, { schema: { hide: true } }, async () => app.swagger());
}
