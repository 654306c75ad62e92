/** The committed OpenAPI document matches the code, and the reference page is served. */
import { describe, expect, it } from "vitest";
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
});
