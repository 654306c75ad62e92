/**
 * Hostile requests for bench/memory.mjs: every route of the API, with what a careless or
 * malicious client sends (random filters and windows of any width, cursors followed, tampered
 * or made up, unknown paths, keys valid, unknown, malformed or missing, sync batches valid,
 * conflicting or invalid, webhook and key admin, wrong methods, bodies too large or not JSON,
 * requests that are not HTTP), big bodies among them (sync batches just under the body limit).
 * Seeded: two runs make the same choices, though times and what the answers teach differ.
 *
 * `hostileLoad({ key, seed, hookUrl })` gives `next()`, which returns the next request as
 * `{ method, path, headers, body }` (or `{ raw }`: bytes for a socket of its own), and
 * `seen(request, status, body)`, which learns cursors, endpoint and key ids from the answers;
 * the endpoints it registers point at `hookUrl`, which `hookReceiver()` serves.
 */
import http from "node:http";
import { mulberry32 } from "../dist/demo/demo.data.js";
import { keyWith } from "../dist/platform/keys.js";

const LISTS = ["withdrawals", "returns", "exchanges", "training-records", "employees", "cost-centers", "sectors", "products", "devices"];
const TRANSACTIONS = LISTS.slice(0, 4);
const RELATIONS = { employeeId: ["emp-", 4, 400], productId: ["prd-", 4, 60], costCenterId: ["cc-", 0, 0], sectorId: ["sec-", 2, 10] };
const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const TEXT = "abcdefghijklmnopqrstuvwxyzÁÉÍÓÚçãõäöüßσςΝéèñ日本 %_\\-.'";
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"];
const YEAR_MS = 365 * 86_400_000;
const OVERSIZED = 4 * 1024 * 1024 + 1024;
const EVENTS = ["withdrawal.created", "return.created", "employee.created", "employee.updated", "device.updated"];

export function hostileLoad({ key, seed = 1, hookUrl }) {
  const r = mulberry32(seed);
  const int = (min, max) => min + Math.floor(r() * (max - min + 1));
  const pick = (list) => list[Math.floor(r() * list.length)];
  const chance = (p) => r() < p;
  const text = (min, max, alphabet = TEXT) => Array.from({ length: int(min, max) }, () => pick([...alphabet])).join("");
  const base62 = (n) => Array.from({ length: n }, () => pick([...BASE62])).join("");
  const wellFormedKey = () => keyWith(base62(32));
  /** What the answers taught: bounded, so the driver holds no more than the server should. */
  const pools = { cursors: [], keys: [], keyIds: [], endpoints: [], recordIds: [] };
  const remember = (list, item, max) => {
    list.push(item);
    if (list.length > max) list.splice(0, list.length - max);
  };
  let serial = 0;

  function authorization() {
    const roll = r();
    if (roll < 0.7) return `Bearer ${key}`;
    if (roll < 0.78 && pools.keys.length > 0) return `Bearer ${pick(pools.keys)}`;
    if (roll < 0.88) return `Bearer ${wellFormedKey()}`;
    if (roll < 0.93) return `Bearer crib_${base62(int(30, 40))}`;
    if (roll < 0.96) return pick(["Basic Zm9vOmJhcg==", "Bearer", "Bearer  ", `bearer ${key} extra`, `Token ${key}`]);
    return undefined;
  }

  function time(ms) {
    if (chance(0.05)) return pick(["2026-02-29T00:00:00Z", "2026-11-20", "2026-11-20T24:00:00Z", "yesterday", "2026-11-20T10:00:00+0300"]);
    const iso = new Date(ms).toISOString();
    if (chance(0.2)) return iso.replace(".", `.${int(0, 9)}`).replace(/\d{3}Z$/, `${int(100, 999)}${int(0, 999999)}Z`);
    if (chance(0.2)) return iso.replace("Z", pick(["+00:00", "-03:00", "+05:30"]));
    return iso;
  }

  function listParams(list) {
    const params = [];
    if (chance(0.6)) params.push(["limit", chance(0.9) ? String(int(1, 100)) : pick(["0", "101", "abc", "1.5", "-1", "1e2"])]);
    if (chance(0.25)) params.push(["name", text(1, 6)]);
    if (list === "cost-centers" && chance(0.3)) params.push(["code", `CC-${int(1, 1200)}`]);
    const transaction = TRANSACTIONS.includes(list);
    if ((transaction || list === "employees") && chance(0.25)) {
      const name = transaction ? pick(Object.keys(RELATIONS)) : pick(["sectorId", "costCenterId"]);
      const [prefix, width, count] = RELATIONS[name];
      params.push([name, width === 0 ? `${prefix}${1010 + 10 * int(0, 12)}` : `${prefix}${String(int(1, count)).padStart(width, "0")}`]);
    }
    if (transaction && chance(0.45)) {
      const now = Date.now();
      const width = Math.floor(Math.exp(r() * Math.log(2 * YEAR_MS)));
      const since = now - int(0, 400) * 86_400_000 - int(0, 86_400_000);
      if (!chance(0.15)) params.push(["createdSince", time(since)]);
      if (!chance(0.15)) params.push(["createdUntil", time(chance(0.05) ? since - width : since + width)]);
    }
    if (chance(0.04)) params.push([pick(["Limit", "utm_source", "sort", "offset", "fields", text(1, 8)]), text(1, 5)]);
    if (chance(0.03) && params.length > 0) params.push(params[0]);
    if (chance(0.02)) params.push([pick(["limit", "name", "cursor"]), ""]);
    return params;
  }

  const query = (params) => params.map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&");

  function list() {
    if (chance(0.3) && pools.cursors.length > 0) {
      const { path, cursor } = pick(pools.cursors);
      const tampered = chance(0.15) ? cursor.slice(0, -int(1, 8)) + base62(int(0, 3)) : cursor;
      return { method: "GET", path: `${path}${path.includes("?") ? "&" : "?"}cursor=${encodeURIComponent(tampered)}`, walk: path };
    }
    const name = pick(LISTS);
    const params = listParams(name);
    if (chance(0.06)) params.push(["cursor", chance(0.5) ? base62(int(1, 200)) : `eyJ2IjoxLCJ0Ijo${base62(int(10, 120))}`]);
    const path = params.length === 0 ? `/v1/${name}` : `/v1/${name}?${query(params)}`;
    return { method: "GET", path, walk: path };
  }

  function record(list, valid) {
    const id = chance(0.1) && pools.recordIds.length > 0 ? pick(pools.recordIds) : `h${seed}-${(serial += 1)}-${base62(4)}`;
    const at = new Date(Date.now() - int(0, 30 * 86_400_000)).toISOString();
    const people = {
      employeeId: `emp-${String(int(1, 400)).padStart(4, "0")}`,
      employeeName: text(1, 30),
      costCenterId: "cc-1010",
      sectorId: "sec-01",
    };
    const shapes = {
      withdrawals: { deviceId: "dev-01", ...people, productId: "prd-0001", productName: text(1, 30), quantity: int(1, 5), deliveredAt: at },
      "training-records": { ...people, trainingName: text(1, 30), productId: null, completedAt: at, expiresAt: null },
      employees: { name: text(1, 30), registration: text(1, 10), sectorId: "sec-01", costCenterId: "cc-1010", active: chance(0.9) },
      "cost-centers": { code: `CC-${int(1, 99999)}`, name: text(1, 30) },
      sectors: { name: text(1, 30) },
      products: { name: text(1, 30), sku: base62(6) },
      devices: { name: text(1, 30), location: null },
    };
    shapes.returns = { ...shapes.withdrawals, condition: pick(["reusable", "damaged", "discarded"]) };
    shapes.exchanges = { ...shapes.withdrawals, returnedProductId: "prd-0002", returnedProductName: text(1, 20), reason: text(1, 40) };
    const out = { id, ...shapes[list] };
    if (!valid) {
      const field = pick(Object.keys(out));
      out[field] = pick([null, "", 12, -1, true, text(201, 260), "2026-13-01T00:00:00Z", { x: 1 }, ["a"], "\u0001"]);
      if (chance(0.3)) out[text(1, 8)] = 1;
    }
    remember(pools.recordIds, id, 2000);
    return out;
  }

  /** 1,000 exchanges of the longest text allowed, in three-byte characters: a body just under the 4 MiB limit. */
  function fullBatch(valid) {
    const long = (n) => text(n, n, "日本語の長い名前");
    const data = Array.from({ length: 1000 }, () => {
      const out = { ...record("exchanges", valid), employeeName: long(200), productName: long(170), returnedProductName: long(170) };
      out.reason = long(valid ? 500 : 501);
      return out;
    });
    return JSON.stringify({ data });
  }

  function sync() {
    const name = pick(LISTS);
    const path = `/v1/sync/${name}`;
    const json = { "content-type": "application/json" };
    const roll = r();
    if (roll < 0.6) {
      const valid = chance(0.7);
      const body = JSON.stringify({
        data: Array.from({ length: chance(0.8) ? int(1, 20) : int(100, 300) }, () => record(name, valid || chance(0.7))),
      });
      return { method: "POST", path, headers: json, body };
    }
    if (roll < 0.63) return { method: "POST", path: "/v1/sync/exchanges", headers: json, body: fullBatch(chance(0.5)) };
    if (roll < 0.65) return { method: "POST", path, headers: json, body: "x".repeat(OVERSIZED) };
    if (roll < 0.7)
      return {
        method: "POST",
        path,
        headers: json,
        body: JSON.stringify({ data: Array.from({ length: 1001 }, (_, i) => ({ id: `x${i}` })) }),
      };
    const bodies = [
      ["application/json", "{"],
      ["application/json", '{"data": 1}'],
      ["application/json", '{"data": []}'],
      ["application/json", "[]"],
      ["application/json", '{"data":[{"id":"a"}],"extra":1}'],
      ["text/plain", '{"data":[]}'],
      ["application/json; charset=latin1", '{"data":[]}'],
      ["application/json", "\uFEFF\uD800"],
      ["application/x-www-form-urlencoded", "a=b"],
    ];
    const [type, body] = pick(bodies);
    return { method: "POST", path, headers: { "content-type": type }, body };
  }

  function admin() {
    const json = { "content-type": "application/json" };
    const endpoint = pools.endpoints.length > 0 && chance(0.8) ? pick(pools.endpoints) : `we_${base62(int(5, 26))}`;
    const keyId = pools.keyIds.length > 0 && chance(0.8) ? pick(pools.keyIds) : `crib_${base62(8)}`;
    const roll = r();
    if (roll < 0.12) {
      // A few endpoints at a time: each one multiplies what every sync makes the delivery loop do.
      if (pools.endpoints.length >= 5) return { method: "DELETE", path: `/v1/webhook-endpoints/${pools.endpoints.shift()}` };
      const url = chance(0.8)
        ? hookUrl
        : pick(["ftp://x", "http://10.0.0.1/", "not a url", "https://localhost/", `${hookUrl}#${text(1, 4)}`]);
      const events = chance(0.9) ? [pick(EVENTS)] : [text(1, 10)];
      return { method: "POST", path: "/v1/webhook-endpoints", headers: json, body: JSON.stringify({ url, events }) };
    }
    if (roll < 0.25) return { method: "GET", path: `/v1/webhook-endpoints${chance(0.5) ? `?limit=${int(1, 100)}` : ""}` };
    if (roll < 0.35) return { method: "GET", path: `/v1/webhook-endpoints/${endpoint}/attempts?limit=${int(1, 100)}` };
    if (roll < 0.4) return { method: "POST", path: `/v1/webhook-endpoints/${endpoint}/${pick(["disable", "enable", "rotate-secret"])}` };
    if (roll < 0.45)
      return {
        method: "POST",
        path: `/v1/webhook-endpoints/${endpoint}/replay`,
        headers: json,
        body: JSON.stringify({ since: new Date(Date.now() - 3_600_000).toISOString() }),
      };
    if (roll < 0.48) return { method: "POST", path: `/v1/webhook-endpoints/${endpoint}/deliveries/wd_${base62(20)}/replay` };
    if (roll < 0.55) return { method: "DELETE", path: `/v1/webhook-endpoints/${endpoint}` };
    if (roll < 0.62) return { method: "GET", path: `/v1/webhook-endpoints/${endpoint}` };
    if (roll < 0.72) {
      const scopes = chance(0.9) ? [pick(["read", "sync", "admin"])] : [text(1, 6)];
      return { method: "POST", path: "/v1/api-keys", headers: json, body: JSON.stringify({ name: text(1, 40), scopes }) };
    }
    if (roll < 0.82) return { method: "GET", path: `/v1/api-keys?limit=${int(1, 100)}` };
    if (roll < 0.9) return { method: "GET", path: `/v1/api-keys/${keyId}` };
    return { method: "POST", path: `/v1/api-keys/${keyId}/revoke` };
  }

  function stray() {
    const roll = r();
    if (roll < 0.3)
      return {
        method: "GET",
        path: `/${pick(["v1", "v2", "api", text(1, 8, BASE62)])}/${text(1, 20, BASE62)}${chance(0.5) ? `?${text(1, 6, BASE62)}=1` : ""}`,
      };
    if (roll < 0.55) {
      const path = pick([
        `/v1/${pick(LISTS)}`,
        `/v1/${pick(LISTS)}/${text(1, 10, BASE62)}`,
        `/v1/sync/${pick(LISTS)}`,
        "/v1/api-keys",
        "/healthz",
      ]);
      return { method: pick(METHODS.filter((m) => m !== "GET")), path, headers: { "content-type": "application/json" }, body: "{}" };
    }
    if (roll < 0.75) return { method: "GET", path: pick(["/healthz", "/readyz", "/v1/openapi.json", "/docs", "/", "/favicon.ico"]) };
    if (roll < 0.82)
      return {
        raw: pick([
          "GARBAGE\r\n\r\n",
          "GET / HTTP/9.9\r\n\r\n",
          "GET /v1/withdrawals HTTP/1.1\r\n\r\n",
          `GET /%zz HTTP/1.1\r\nHost: x\r\n\r\n`,
        ]),
      };
    if (roll < 0.86) return { method: "GET", path: "/v1/withdrawals", headers: { "x-big": "x".repeat(17 * 1024) } };
    return {
      method: "GET",
      path: `/v1/${pick(LISTS)}`,
      headers: { "x-request-id": chance(0.5) ? text(1, 40, `${BASE62}._:-`) : text(1, 140, `${BASE62} !#$%&*+/=?@`) },
    };
  }

  return {
    next() {
      const roll = r();
      const request = roll < 0.5 ? list() : roll < 0.68 ? sync() : roll < 0.8 ? admin() : stray();
      if (request.raw !== undefined) return request;
      const auth = request.path.startsWith("/v1/") ? authorization() : undefined;
      return { ...request, headers: { ...request.headers, ...(auth === undefined ? {} : { authorization: auth }) } };
    },
    /** Learns what later requests reuse from a 2xx answer's parsed body. */
    seen(request, status, body) {
      if (status < 200 || status >= 300 || body === null || typeof body !== "object") return;
      if (request.walk !== undefined && typeof body.cursor === "string")
        remember(pools.cursors, { path: request.walk, cursor: body.cursor }, 500);
      if (request.path === "/v1/webhook-endpoints" && request.method === "POST" && typeof body.id === "string")
        remember(pools.endpoints, body.id, 50);
      if (request.path === "/v1/api-keys" && request.method === "POST" && typeof body.key === "string") {
        remember(pools.keys, body.key, 50);
        remember(pools.keyIds, body.id, 50);
      }
    },
  };
}

/** A loopback webhook receiver that answers every delivery 204 at once. */
export async function hookReceiver() {
  const server = http.createServer((request, response) => {
    request.resume();
    response.writeHead(204).end();
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  return { url: `http://127.0.0.1:${server.address().port}/hook`, close: () => server.close() };
}
