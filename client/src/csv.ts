/** CSV as the export writes it (RFC 4180), with no Node.js in it: the console's download uses it too. */

/** A CSV cell (RFC 4180), with a text that a spreadsheet would take for a formula made text (numbers stay numbers). */
export function csvCell(value: unknown): string {
  if (value === null || value === undefined) return "";
  let text = typeof value === "string" ? value : String(value);
  if (typeof value === "string" && /^[=+\-@\t\r]/.test(text)) text = `'${text}`;
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** The column of a usage group's name beside its id: `employeeName` beside `employeeId`. */
export const nameFieldOf = (field: string): string => `${field.slice(0, -2)}Name`;

/**
 * A usage report's CSV columns: its period, each group's id and name, per kind a count and a
 * quantity (`withdrawals.count`, ...), and the net quantity.
 */
export function usageFields(groupBy: string | undefined): string[] {
  const groups = (groupBy ?? "").split(",").filter((f) => f !== "");
  const kinds = ["withdrawals", "returns", "exchanges"].flatMap((kind) => [`${kind}.count`, `${kind}.quantity`]);
  return ["period", ...groups.flatMap((field) => [field, nameFieldOf(field)]), ...kinds, "netQuantity"];
}

/** An item's value of a CSV column; a dotted column names a field of an object field. */
export function valueAt(item: unknown, field: string): unknown {
  return field.split(".").reduce<unknown>((value, part) => (value as Record<string, unknown> | undefined)?.[part], item);
}
