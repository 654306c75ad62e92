/**
 * @cribline/client in a browser (headless Chromium): its build, loaded as ES modules by a page,
 * walks a list of a real server and verifies a webhook with Web Crypto; and the package that
 * `npm pack` would publish holds the build, its declarations and its command.
 */
import { execFile } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { webhookHeaders } from "../src/webhooks/signature.js";
import { dumpDom } from "./support/chromium.js";
import { FACTORIES } from "./support/factories.js";
import { newTenant, sync, useServer } from "./support/harness.js";

const server = useServer();
const run = promisify(execFile);
const CLIENT = new URL("../client/", import.meta.url).pathname;

let pages: Server;
let pagesUrl = "";
const scripts = new Map<string, string>();
beforeAll(async () => {
  if (!existsSync(join(CLIENT, "dist", "index.js"))) throw new Error("no build of the client in client/dist: run `npm run build` first");
  // Serves the client's build and one page per test (by name) from an origin of its own.
  pages = createServer((req, res) => {
    const path = (req.url ?? "/").split("?")[0]!;
    if (path.startsWith("/dist/") && existsSync(join(CLIENT, path))) {
      res.writeHead(200, { "content-type": "text/javascript" }).end(readFileSync(join(CLIENT, path)));
    } else if (scripts.has(path)) {
      res.writeHead(200, { "content-type": "text/html" }).end(`<!doctype html><body><script type="module">${scripts.get(path)}</script>`);
    } else res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => pages.listen(0, "127.0.0.1", resolve));
  pagesUrl = `http://127.0.0.1:${(pages.address() as { port: number }).port}`;
});
afterAll(() => new Promise<void>((resolve) => pages.close(() => resolve())));

/** The page's body once its script has run, as headless Chromium renders it. */
async function render(name: string, script: string): Promise<string> {
  scripts.set(`/${name}`, script);
  // The API sends no CORS fields (it serves integrations, not pages): the test page may read it anyway.
  const stdout = await dumpDom(`${pagesUrl}/${name}`, ["--disable-web-security"]);
  return /<pre id="out">([^<]*)<\/pre>/.exec(stdout)?.[1] ?? stdout;
}

describe("the client in a browser", () => {
  it("walks a list and verifies a webhook", async () => {
    const tenant = await newTenant(server());
    await sync(
      server(),
      tenant,
      "withdrawals",
      Array.from({ length: 45 }, () => FACTORIES.withdrawals!()),
    );
    const secret = `whsec_${Buffer.from("a browser's secret, 24 bytes").toString("base64")}`;
    const body = JSON.stringify({ type: "withdrawal.created", timestamp: new Date().toISOString(), data: { id: "w-1" } });
    const headers = webhookHeaders([secret], "msg_1", Math.floor(Date.now() / 1000), body);
    const out = await render(
      "walk",
      `
      import { CriblineClient, verifyWebhook } from "/dist/index.js";
      const show = (value) => { const pre = document.createElement("pre"); pre.id = "out"; pre.textContent = JSON.stringify(value); document.body.append(pre); };
      try {
        const client = new CriblineClient({ baseUrl: ${JSON.stringify(server().url)}, apiKey: ${JSON.stringify(tenant.keys.read)} });
        const ids = [];
        for await (const w of client.withdrawals.list({}, { limit: 10 })) ids.push(w.id);
        const event = await verifyWebhook({ secret: ${JSON.stringify(secret)}, headers: ${JSON.stringify(headers)}, body: ${JSON.stringify(body)} });
        let refused = false;
        try { await verifyWebhook({ secret: ${JSON.stringify(secret)}, headers: ${JSON.stringify(headers)}, body: ${JSON.stringify(body)} + " " }); } catch { refused = true; }
        show({ count: ids.length, unique: new Set(ids).size, type: event.type, refused });
      } catch (error) { show({ error: String(error) }); }
      `,
    );
    expect(JSON.parse(out.replaceAll("&quot;", '"'))).toEqual({ count: 45, unique: 45, type: "withdrawal.created", refused: true });
  }, 60_000);
});

describe("the client as a package", () => {
  it("publishes its build with declarations, its command and its README, and no sources", async () => {
    const { stdout } = await run("npm", ["pack", "--dry-run", "--json"], { cwd: CLIENT });
    const [packed] = JSON.parse(stdout) as { name: string; files: { path: string }[] }[];
    const files = packed!.files.map((file) => file.path);
    expect(packed!.name).toBe("@cribline/client");
    expect(files).toEqual(
      expect.arrayContaining([
        "package.json",
        "README.md",
        "bin/cribline-client.js",
        "dist/index.js",
        "dist/index.d.ts",
        "dist/cli.js",
        "dist/webhooks.js",
      ]),
    );
    expect(files.filter((file) => file.startsWith("src/"))).toEqual([]);
    const manifest = JSON.parse(readFileSync(join(CLIENT, "package.json"), "utf8"));
    expect(manifest.dependencies).toBeUndefined();
    expect(manifest.type).toBe("module");
  });
});
