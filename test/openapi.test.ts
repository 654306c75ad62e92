/** The committed OpenAPI document matches the code, and the reference page is served. */
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { dumpDom } from "./support/chromium.js";
import { get, useServer } from "./support/harness.js";

const server = useServer();

describe("OpenAPI document", () => {
  it("is served at /v1/openapi.json and matches the committed openapi.json (npm run openapi rewrites it)", async () => {
    const reply = await get(server(), "/v1/openapi.json");
    expect(reply.status).toBe(200);
    await expect(`${JSON.stringify(reply.body, null, 2)}\n`).toMatchFileSnapshot("../openapi.json");
  });

  it("documents every list, its filters and the sync endpoints", async () => {
    const doc = (await get(server(), "/v1/openapi.json")).body;
    const lists = [
      "withdrawals",
      "returns",
      "exchanges",
      "training-records",
      "employees",
      "cost-centers",
      "sectors",
      "products",
      "devices",
    ];
    for (const list of lists) {
      const params = doc.paths[`/v1/${list}`].get.parameters.map((p: { name: string }) => p.name);
      expect(params).toEqual(expect.arrayContaining(["limit", "cursor", "name"]));
      expect(doc.paths[`/v1/sync/${list}`].post).toBeDefined();
    }
    expect(doc.paths["/v1/withdrawals"].get.parameters.map((p: { name: string }) => p.name)).toEqual(
      expect.arrayContaining(["createdSince", "createdUntil", "employeeId", "productId", "costCenterId", "sectorId"]),
    );
    expect(doc.components.schemas.Withdrawal.properties).toHaveProperty("deliveredAt");
    expect(doc.components.schemas.Problem.properties).toHaveProperty("code");
  });

  it("serves a readable reference page at /docs without a key", async () => {
    const reply = await get(server(), "/docs/");
    expect(reply.status).toBe(200);
    expect(String(reply.body)).toContain("<html");
  });

  it("names every operation with an operationId of its own, and carries the package's version", async () => {
    const doc = (await get(server(), "/v1/openapi.json")).body;
    const ids: string[] = [];
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { operationId?: string }>>)) {
      for (const [method, operation] of Object.entries(item)) {
        expect(operation.operationId, `${method} ${path}`).toMatch(/^[a-z][A-Za-z]+$/);
        ids.push(operation.operationId!);
      }
    }
    expect(ids.length).toBeGreaterThanOrEqual(34);
    expect(new Set(ids).size).toBe(ids.length);
    expect(doc.paths["/v1/training-records"].get.operationId).toBe("listTrainingRecords");
    expect(doc.paths["/v1/sync/cost-centers"].post.operationId).toBe("syncCostCenters");
    expect(doc.info.version).toBe(JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version);
  });

  it("declares the 429 of every operation, and the 503 of every one that reads the database (all but /healthz)", async () => {
    const doc = (await get(server(), "/v1/openapi.json")).body;
    type Answer = { content?: Record<string, { schema?: { $ref?: string } }>; headers?: Record<string, unknown> };
    for (const [path, item] of Object.entries(doc.paths as Record<string, Record<string, { responses: Record<string, Answer> }>>)) {
      for (const [method, operation] of Object.entries(item)) {
        const expected = path === "/healthz" ? ["429"] : ["429", "503"];
        for (const status of expected) {
          const answer = operation.responses[status];
          expect(answer?.content?.["application/problem+json"]?.schema?.$ref, `${method} ${path} ${status}`).toBe(
            "#/components/schemas/Problem",
          );
          expect(answer?.headers, `${method} ${path} ${status}`).toHaveProperty("Retry-After");
        }
        if (path === "/healthz") expect(operation.responses["503"]).toBeUndefined();
      }
    }
  });
});

describe("the reference page in a browser", () => {
  it("shows cribline's name, loads /v1/openapi.json and the package's version", async () => {
    // Headless Chromium renders the page, scripts and all, and prints the resulting DOM.
    const stdout = await dumpDom(`${server().url}/docs`);
    const version = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8")).version;
    expect(stdout).toMatch(/<title>cribline API reference<\/title>/);
    // The bar names the document clients use, not the plugin's copy at /docs/json.
    expect(stdout).toMatch(new RegExp(`<option value="/v1/openapi.json">cribline API ${version.replaceAll(".", "\\.")}`));
    expect(stdout).not.toContain("/docs/json");
    expect(stdout).toMatch(new RegExp(`class="version"> ${version.replaceAll(".", "\\.")} </pre>`));
    // cribline's own logo (an SVG of its name) in the bar, and the operations rendered.
    expect(stdout).toMatch(/topbar-wrapper"><a[^>]*><img[^>]*src="data:image\/svg\+xml;base64,/);
    expect(stdout).toContain("List withdrawals");
  }, 60_000);
});
