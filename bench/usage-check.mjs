/**
 * The usage section's check of the reports' sums (bench/usage.mjs, BENCH_USAGE_CHECK), once per
 * engine on the bench data, with the server the section measured:
 *
 *   1. SQL straight over the tables, the year's window: the withdrawals, returns and exchanges
 *      (count, quantity from the body), usage_records per kind, and usage_months per field;
 *   2. the year by cost center by month in the tenant's zone (whole months: read from the
 *      monthly totals), every page, against the records as usage-data.mjs generates them,
 *      tallied here per Berlin month (the month starts written out below, not taken from dist/);
 *   3. the same report read from the records: grouped by cost center and sector (two fields are
 *      never read from totals) and summed per cost center; one cost center filtered by its own id
 *      (still read from totals) and by its id and its sector's (a filter on another field: read
 *      from the records), which must give that cost center's rows;
 *   4. the year by product in total (own zone) against the generated records, and the year by
 *      cost center by month in America/New_York, whose sums per cost center over the year must be
 *      the same (other months, the same records).
 */
import Database from "better-sqlite3";
import { withClient } from "./dataset.mjs";
import { END, START, USAGE_TENANT, YEAR, costCenterId, kindCounts, transactionsOf } from "./usage-data.mjs";

const KINDS = ["withdrawals", "returns", "exchanges"];
const HOUR = 3_600_000;

/** GET `path` as the tenant: ms, the page's rows and its cursor. */
export async function request(target, path) {
  const started = performance.now();
  const response = await fetch(target.url + path, { headers: { authorization: `Bearer ${target.key}` } });
  const text = await response.text();
  const ms = performance.now() - started;
  if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}: ${text.slice(0, 300)}`);
  const body = JSON.parse(text);
  return { ms, data: body.data, cursor: body.cursor };
}

/** Every page of a report: its rows, pages and ms. */
export async function walk(target, path) {
  const rows = [];
  let pages = 0;
  let cursor = null;
  const started = performance.now();
  do {
    const page = await request(target, `${path}${cursor === null ? "" : `&cursor=${encodeURIComponent(cursor)}`}`);
    rows.push(...page.data);
    pages += 1;
    cursor = page.cursor;
  } while (cursor !== null);
  return { rows, pages, ms: performance.now() - started };
}

/** The 13 month starts of the year in Berlin (summer time, +02:00, from April to October), and their labels. */
function berlinMonths() {
  return Array.from({ length: 13 }, (_, k) => {
    const year = 2025 + Math.floor((11 + k) / 12);
    const month = (11 + k) % 12;
    const offset = month >= 3 && month <= 9 ? 2 : 1;
    const label = `${year}-${String(month + 1).padStart(2, "0")}-01T00:00:00+0${offset}:00`;
    return { start: Date.UTC(year, month, 1) - offset * HOUR, label };
  });
}

const vectorOf = (row) => [
  row.withdrawals.count,
  row.withdrawals.quantity,
  row.returns.count,
  row.returns.quantity,
  row.exchanges.count,
  row.exchanges.quantity,
  row.netQuantity,
];
const add = (to, v) => v.forEach((x, i) => (to[i] = (to[i] ?? 0) + x));

/** The generated records tallied per (Berlin month, cost center) and per product, and in all. */
function generated(rows) {
  const months = berlinMonths();
  const cells = new Map();
  const products = new Map();
  const total = [0, 0, 0, 0, 0, 0, 0];
  for (const [k, [kind, count]] of Object.entries(kindCounts(rows)).entries()) {
    for (const { at, record } of transactionsOf(kind, count)) {
      let m = 0;
      while (months[m + 1].start <= at) m += 1;
      const v = [0, 0, 0, 0, 0, 0, 0];
      v[2 * k] = 1;
      v[2 * k + 1] = record.quantity;
      v[6] = k === 0 ? record.quantity : k === 1 ? -record.quantity : 0;
      const key = `${months[m].label} ${record.costCenterId}`;
      if (!cells.has(key)) cells.set(key, []);
      add(cells.get(key), v);
      if (!products.has(record.productId)) products.set(record.productId, []);
      add(products.get(record.productId), v);
      add(total, v);
    }
  }
  return { cells, products, total };
}

/** Rows keyed by `key(row)`, their vectors summed. */
function keyed(rows, key) {
  const map = new Map();
  for (const row of rows) {
    if (!map.has(key(row))) map.set(key(row), []);
    add(map.get(key(row)), vectorOf(row));
  }
  return map;
}

/** How many keys differ between two maps, and the first few. */
function differences(expected, actual) {
  const found = [];
  for (const key of new Set([...expected.keys(), ...actual.keys()])) {
    const a = JSON.stringify(expected.get(key) ?? null);
    const b = JSON.stringify(actual.get(key) ?? null);
    if (a !== b) found.push(`${key}: expected ${a}, got ${b}`);
  }
  return { count: found.length, sample: found.slice(0, 3) };
}

/** `all(sql, params)` on the engine's copy, `?` placeholders, and the expression of a body's quantity. */
async function withSql(engine, databaseUrl, work) {
  if (engine === "sqlite") {
    const db = new Database(databaseUrl.slice("sqlite:".length), { readonly: true });
    try {
      return await work(async (text, params) => db.prepare(text).all(...params), "json_extract(body, '$.quantity')");
    } finally {
      db.close();
    }
  }
  return withClient(databaseUrl, (client) =>
    work(async (text, params) => {
      let n = 0;
      return (
        await client.query(
          text.replace(/\?/g, () => `$${++n}`),
          params,
        )
      ).rows;
    }, "(body::jsonb->>'quantity')::int"),
  );
}

/** The straight SQL figures of the year's window: per table, [count, quantity] of each kind. */
async function sqlFigures(engine, databaseUrl) {
  return withSql(engine, databaseUrl, async (all, quantity) => {
    const [{ id }] = await all("SELECT id FROM tenants WHERE slug = ?", [USAGE_TENANT]);
    const window = [id, START, END];
    const tables = [];
    for (const kind of KINDS) {
      const [r] = await all(
        `SELECT count(*) AS n, sum(${quantity}) AS q FROM ${kind} WHERE tenant_id = ? AND event_at >= ? AND event_at < ?`,
        window,
      );
      tables.push(Number(r.n), Number(r.q));
    }
    const copies = [0, 0, 0, 0, 0, 0];
    const byKind = await all(
      "SELECT kind, count(*) AS n, sum(quantity) AS q FROM usage_records WHERE tenant_id = ? AND event_at >= ? AND event_at < ? GROUP BY kind",
      window,
    );
    for (const r of byKind) [copies[2 * (r.kind - 1)], copies[2 * (r.kind - 1) + 1]] = [Number(r.n), Number(r.q)];
    const fields = await all(
      `SELECT field, sum(withdrawals) AS a, sum(withdrawn) AS b, sum(returns) AS c, sum(returned) AS d, sum(exchanges) AS e, sum(exchanged) AS f
         FROM usage_months WHERE tenant_id = ? AND month >= ? AND month <= ? GROUP BY field ORDER BY field`,
      [id, 2025 * 12 + 11, 2026 * 12 + 10],
    );
    const months = Object.fromEntries(fields.map((r) => [r.field, ["a", "b", "c", "d", "e", "f"].map((c) => Number(r[c]))]));
    return { tables, copies, months };
  });
}

/** The check on one engine; resolves to lines for the report and the differences found. */
export async function checkUsage(engine, { target, databaseUrl, meta, log }) {
  const started = performance.now();
  const lines = [];
  const problems = [];
  const note = (name, diff, rows) => {
    lines.push(`    ${name}: ${rows} rows, ${diff.count === 0 ? "no difference" : `${diff.count} DIFFER (${diff.sample.join("; ")})`}`);
    if (diff.count > 0) problems.push(`${name}: ${diff.count} differ`);
  };
  const truth = generated(meta.rows);
  const six = truth.total.slice(0, 6);
  const sql = await sqlFigures(engine, databaseUrl);
  const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);
  lines.push(
    `  check (bench/usage-check.mjs): SQL over the year's window: withdrawals ${sql.tables[0]} (quantity ${sql.tables[1]}), ` +
      `returns ${sql.tables[2]} (${sql.tables[3]}), exchanges ${sql.tables[4]} (${sql.tables[5]}); as generated: ${same(sql.tables, six) ? "yes" : `NO (${six})`}; ` +
      `usage_records the same: ${same(sql.copies, six) ? "yes" : `NO (${sql.copies})`}; ` +
      `usage_months of each field the same: ${Object.values(sql.months).every((v) => same(v, six)) ? "yes" : `NO (${JSON.stringify(sql.months)})`}`,
  );
  if (!same(sql.tables, six) || !same(sql.copies, six) || !Object.values(sql.months).every((v) => same(v, six)))
    problems.push("SQL counts");

  const own = `/v1/usage?groupBy=costCenterId&interval=month&${YEAR}&limit=100`;
  const report = await walk(target, own);
  const byCell = keyed(report.rows, (r) => `${r.period} ${r.costCenterId}`);
  const sums = [];
  for (const v of byCell.values()) add(sums, v);
  lines.push(
    `    year x cost center x month, own zone (monthly totals), ${report.pages} pages: sums ${sums.slice(0, 6).join(", ")}, ` +
      `${same(sums.slice(0, 6), sql.tables) ? "equal to the SQL counts" : "DIFFERENT from the SQL counts"}`,
  );
  if (!same(sums.slice(0, 6), sql.tables)) problems.push("own-zone report sums against SQL");
  note("the same against the generated records, per month and cost center", differences(truth.cells, byCell), report.rows.length);

  const pairs = await walk(target, `/v1/usage?groupBy=costCenterId,sectorId&interval=month&${YEAR}&limit=100`);
  note(
    `the same from the records (groupBy=costCenterId,sectorId, ${pairs.pages} pages, summed per cost center)`,
    differences(
      byCell,
      keyed(pairs.rows, (r) => `${r.period} ${r.costCenterId}`),
    ),
    pairs.rows.length,
  );
  const cc = costCenterId(0);
  const ccRows = new Map([...byCell].filter(([key]) => key.endsWith(` ${cc}`)));
  const byId = await walk(target, `${own}&costCenterId=${cc}`);
  note(
    `costCenterId=${cc} (monthly totals)`,
    differences(
      ccRows,
      keyed(byId.rows, (r) => `${r.period} ${r.costCenterId}`),
    ),
    byId.rows.length,
  );
  const bySector = await walk(target, `${own}&costCenterId=${cc}&sectorId=sec-01`);
  note(
    `costCenterId=${cc}&sectorId=sec-01, its sector (records)`,
    differences(
      ccRows,
      keyed(bySector.rows, (r) => `${r.period} ${r.costCenterId}`),
    ),
    bySector.rows.length,
  );

  const products = await walk(target, `/v1/usage?groupBy=productId&interval=total&${YEAR}&limit=100`);
  note(
    `year x product, total, own zone (${products.pages} pages), against the generated records`,
    differences(
      truth.products,
      keyed(products.rows, (r) => r.productId),
    ),
    products.rows.length,
  );
  const yearly = keyed(report.rows, (r) => r.costCenterId);
  const ny = await walk(target, `/v1/usage?groupBy=costCenterId&interval=month&${YEAR}&timeZone=America/New_York&limit=100`);
  note(
    `year x cost center x month in America/New_York (${ny.pages} pages), per cost center over the year`,
    differences(
      yearly,
      keyed(ny.rows, (r) => r.costCenterId),
    ),
    ny.rows.length,
  );
  lines.push(`    (the check took ${((performance.now() - started) / 1000).toFixed(0)} s)`);
  log(`  check: ${problems.length === 0 ? "no difference" : problems.join("; ")} (${((performance.now() - started) / 1000).toFixed(0)} s)`);
  return { lines, problems };
}
