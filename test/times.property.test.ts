/**
 * Times in: for any text near the RFC 3339 date-time form, a record's event date and a list's
 * `createdSince` are taken exactly when the grammar below takes them (README: times are RFC
 * 3339 with seconds and a zone), and a record returns the instant it was sent as, in UTC at
 * millisecond precision, the digits past the millisecond dropped.
 *
 * The oracle is the grammar written as one regular expression with a calendar check, and the
 * instant computed by Date.UTC; the server reads times its own way.
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { withdrawal } from "./support/factories.js";
import { get, newTenant, request, useServer } from "./support/harness.js";

const server = useServer();

const GRAMMAR = /^(\d{4})-(\d{2})-(\d{2})T([01]\d|2[0-3]):([0-5]\d):([0-5]\d)(?:\.(\d+))?(?:(Z)|([+-])([01]\d|2[0-3]):([0-5]\d))$/;

const FIRST = Date.parse("0001-01-01T00:00:00.000Z");
const LAST = Date.parse("9999-12-31T23:59:59.999Z");

/** The instant the text names, in milliseconds, or undefined when it is not a date-time the API takes. */
function oracle(text: string): number | undefined {
  const m = GRAMMAR.exec(text);
  if (m === null) return undefined;
  const [, y, mo, d, h, mi, s, fraction = "", z, sign, oh, om] = m;
  const year = Number(y);
  const month = Number(mo);
  const day = Number(d);
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  const days = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1];
  if (year < 1 || days === undefined || day < 1 || day > days) return undefined;
  const date = new Date(Date.UTC(2000, month - 1, day, Number(h), Number(mi), Number(s), Number(fraction.slice(0, 3).padEnd(3, "0"))));
  date.setUTCFullYear(year);
  const offset = z === "Z" ? 0 : (sign === "-" ? -1 : 1) * (Number(oh) * 60 + Number(om));
  const ms = date.getTime() - offset * 60_000;
  // Years 1 to 9999 in UTC: what four-digit years can return.
  return ms < FIRST || ms > LAST ? undefined : ms;
}

const two = (max: number) => fc.integer({ min: 0, max }).map((n) => String(n).padStart(2, "0"));
const someDigits = (min: number, max: number) =>
  fc.array(fc.constantFrom(..."0123456789"), { minLength: min, maxLength: max }).map((d) => d.join(""));

/** Mostly a valid piece, sometimes one out of its range: so that most texts are off by one piece at most. */
const piece = (valid: fc.Arbitrary<string>, off: fc.Arbitrary<string>) =>
  fc.oneof({ arbitrary: valid, weight: 6 }, { arbitrary: off, weight: 1 });

/** Texts that are date-times, nearly so, or off by a piece: every part can be out of its range. */
const nearTimes = fc
  .record({
    year: piece(
      fc.constantFrom("0001", "0099", "1900", "1970", "2000", "2024", "2100", "9999"),
      fc.oneof(fc.constant("0000"), someDigits(3, 5)),
    ),
    dash: piece(fc.constant("-"), fc.constantFrom("/", "")),
    month: piece(
      two(12).filter((m) => m !== "00"),
      fc.oneof(fc.constantFrom("00", "13"), someDigits(1, 1)),
    ),
    day: piece(
      fc.oneof(
        two(28).filter((d) => d !== "00"),
        fc.constantFrom("29", "30", "31"),
      ),
      fc.constantFrom("00", "32", "1"),
    ),
    t: piece(fc.constant("T"), fc.constantFrom("t", " ", "")),
    hour: piece(two(23), fc.constantFrom("24", "25", "1")),
    minute: piece(two(59), fc.constantFrom("60", "61", "1")),
    second: piece(two(59), fc.constantFrom("60", "", "1")),
    fraction: piece(
      fc.oneof(
        fc.constant(""),
        someDigits(1, 12).map((d) => `.${d}`),
      ),
      fc.oneof(
        fc.constant("."),
        someDigits(1, 3).map((d) => `,${d}`),
      ),
    ),
    zone: piece(
      fc.oneof(
        fc.constant("Z"),
        fc.tuple(fc.constantFrom("+", "-"), two(23), two(59)).map(([sign, h, m]) => `${sign}${h}:${m}`),
      ),
      fc.constantFrom("z", "", "+24:00", "-00:60", "+0530", "+05:3", "UTC"),
    ),
    tail: piece(fc.constant(""), fc.constantFrom(" ", "Z", "0", "\n")),
  })
  .map(
    (p) =>
      `${p.year}${p.dash}${p.month}-${p.day}${p.t}${p.hour}:${p.minute}${p.second === "" ? "" : `:${p.second}`}${p.fraction}${p.zone}${p.tail}`,
  );

describe("times in", () => {
  it("a record's event date is stored exactly when the grammar takes it, as the instant it names", async () => {
    const tenant = await newTenant(server());
    let n = 0;
    await fc.assert(
      fc.asyncProperty(nearTimes, async (text) => {
        n += 1;
        const id = `time-${n}`;
        const reply = await request(server(), "POST", "/v1/sync/withdrawals", {
          key: tenant.keys.sync,
          body: { data: [withdrawal({ id, deliveredAt: text })] },
        });
        const expected = oracle(text);
        if (expected === undefined) {
          expect(reply.status, text).toBe(400);
          expect((reply.body as { code: string }).code).toBe("invalid_records");
          return;
        }
        expect(reply.status, text).toBe(200);
        const page = await get(server(), "/v1/withdrawals?limit=1", tenant.keys.read);
        expect(page.body.data[0].id).toBe(id);
        expect(page.body.data[0].deliveredAt, text).toBe(new Date(expected).toISOString());
      }),
      { numRuns: 200 },
    );
  });

  it("a list's createdSince is taken exactly when the grammar takes it", async () => {
    const tenant = await newTenant(server());
    await fc.assert(
      fc.asyncProperty(nearTimes, async (text) => {
        const reply = await get(server(), `/v1/withdrawals?limit=1&createdSince=${encodeURIComponent(text)}`, tenant.keys.read);
        if (oracle(text) === undefined) {
          expect(reply.status, text).toBe(400);
          expect(reply.body.code).toBe("invalid_time");
        } else {
          expect(reply.status, text).toBe(200);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("the edges of the calendar and of the fraction", async () => {
    const tenant = await newTenant(server());
    const cases: Array<[string, string | undefined]> = [
      ["2024-02-29T00:00:00Z", "2024-02-29T00:00:00.000Z"],
      ["2023-02-29T00:00:00Z", undefined],
      ["1900-02-29T00:00:00Z", undefined],
      ["2000-02-29T23:59:59.9999999999Z", "2000-02-29T23:59:59.999Z"],
      ["0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000Z"],
      ["0001-01-01T00:00:00+00:01", undefined],
      ["9999-12-31T23:59:59.999Z", "9999-12-31T23:59:59.999Z"],
      ["9999-12-31T23:59:59.999-00:01", undefined],
      ["2026-11-22T10:15:30.5+05:30", "2026-11-22T04:45:30.500Z"],
      ["2026-11-22T00:15:30-23:59", "2026-11-23T00:14:30.000Z"],
      ["0099-06-01T12:00:00Z", "0099-06-01T12:00:00.000Z"],
      ["2026-11-22T10:15:30.Z", undefined],
      ["2026-11-22T24:00:00Z", undefined],
      ["2026-11-22T10:15:60Z", undefined],
    ];
    let n = 0;
    for (const [text, stored] of cases) {
      n += 1;
      const reply = await request(server(), "POST", "/v1/sync/withdrawals", {
        key: tenant.keys.sync,
        body: { data: [withdrawal({ id: `edge-${n}`, deliveredAt: text })] },
      });
      expect(reply.status, text).toBe(stored === undefined ? 400 : 200);
      expect(oracle(text) === undefined ? undefined : new Date(oracle(text) as number).toISOString(), text).toBe(stored);
      if (stored === undefined) continue;
      const page = await get(server(), "/v1/withdrawals?limit=1", tenant.keys.read);
      expect(page.body.data[0].deliveredAt, text).toBe(stored);
    }
  });
});
