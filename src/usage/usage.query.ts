/**
 * A usage report's query string, read strictly (platform/query-string.ts): what to group by,
 * per which interval, over which window of event dates (both bounds required), in which time
 * zone, for which ids.
 */
import { Type, type TObject } from "@sinclair/typebox";
import { ID_PATTERN } from "../collections/fields.js";
import { ApiError } from "../platform/errors.js";
import {
  filterKeyOf,
  PAGE_PARAMS,
  pageRequestOf,
  parseParams,
  querySchemaOf,
  textParam,
  timeParam,
  timeWindowOf,
  type PageRequest,
  type Param,
} from "../platform/query-string.js";
import { zoneNamed, type Interval } from "../platform/zone.js";
import { USAGE_FIELD_NAMES as FIELDS, type UsageField } from "./usage.repository.js";

export interface UsageQuery extends PageRequest {
  groupBy: UsageField[];
  interval: Interval;
  /** Inclusive bounds on the event date, in milliseconds. */
  since: number;
  until: number;
  /** Undefined: the tenant's own. */
  timeZone: string | undefined;
  filters: [UsageField, string][];
  /** Canonical form of everything but the page, which a cursor is bound to. */
  filterKey: string;
}

const isField = (name: string): name is UsageField => (FIELDS as string[]).includes(name);
const INTERVALS: Interval[] = ["day", "week", "month", "total"];

const GROUP_BY: Param = {
  schema: Type.String({
    pattern: `^(${FIELDS.join("|")})(,(${FIELDS.join("|")}))?$`,
    description: `What a row is: one of ${FIELDS.join(", ")}, or two of them separated by a comma (\`costCenterId,productId\`), rows ordered by the first, then the second.`,
  }),
  error: "invalid_parameter",
  parse: (raw) => {
    const fields = raw.split(",");
    return fields.length <= 2 && fields.every(isField) && fields[0] !== fields[1] ? fields : undefined;
  },
  expects: `one of ${FIELDS.join(", ")}, or two different ones separated by a comma`,
};

const INTERVAL: Param = {
  schema: Type.String({
    enum: INTERVALS,
    default: "total",
    description:
      "The periods rows count in: calendar days, ISO weeks (from Monday), calendar months of the time zone, or the whole window (`total`).",
  }),
  error: "invalid_parameter",
  parse: (raw) => ((INTERVALS as string[]).includes(raw) ? raw : undefined),
  expects: `one of ${INTERVALS.join(", ")}`,
};

const ZONE: Param = {
  schema: Type.String({
    description:
      "An IANA time zone (`Europe/Berlin`) whose calendar the periods follow; by default the tenant's (UTC unless the operator set one).",
  }),
  error: "invalid_parameter",
  parse: zoneNamed,
  expects: "an IANA time zone name such as Europe/Berlin or America/St_Johns",
};

const TIME = timeParam("Required. Inclusive; matches the event date, as the transaction lists' window does.");
const filter = (field: string) =>
  textParam(Type.String({ pattern: ID_PATTERN, description: `Only records with this \`${field}\`.` }), "invalid_parameter", "an id");

const USAGE_PARAMS: Readonly<Record<string, Param>> = Object.freeze({
  ...PAGE_PARAMS,
  groupBy: GROUP_BY,
  interval: INTERVAL,
  createdSince: TIME,
  createdUntil: TIME,
  timeZone: ZONE,
  ...Object.fromEntries(FIELDS.map((f) => [f, filter(f)])),
});

export const usageQuerySchema = (): TObject => querySchemaOf(USAGE_PARAMS);

export function parseUsageQuery(rawQuery: string): UsageQuery {
  const { values, texts } = parseParams(rawQuery, USAGE_PARAMS);
  for (const name of ["groupBy", "createdSince", "createdUntil"]) {
    if (!values.has(name)) throw new ApiError("missing_parameter", `${name} is required`, { param: name });
  }
  const { since, until } = timeWindowOf(values);
  return {
    ...pageRequestOf(values),
    groupBy: values.get("groupBy") as UsageField[],
    interval: (values.get("interval") as Interval | undefined) ?? "total",
    since: since ?? 0,
    until: until ?? 0,
    timeZone: values.get("timeZone") as string | undefined,
    filters: FIELDS.filter((f) => values.has(f)).map((f) => [f, values.get(f) as string]),
    filterKey: filterKeyOf(texts),
  };
}
