/**
 * The events list's query string: the paging parameters of every list, one event `type`, and
 * a time window on the event's own `createdAt`, read strictly (platform/query-string.ts).
 */
import { Type, type TObject } from "@sinclair/typebox";
import {
  filterKeyOf,
  PAGE_PARAMS,
  pageRequestOf,
  parseParams,
  querySchemaOf,
  timeParam,
  timeWindowOf,
  type PageRequest,
  type Param,
} from "../platform/query-string.js";
import { EVENT_TYPES } from "../webhooks/events.js";

export interface EventQuery extends PageRequest {
  type: string | undefined;
  /** Inclusive bounds on the event's createdAt, in milliseconds. */
  since: number | undefined;
  until: number | undefined;
  /** Canonical form of the filters, which a cursor is bound to. */
  filterKey: string;
}

const TYPE: Param = {
  schema: Type.String({ enum: [...EVENT_TYPES], description: "Only events of this type." }),
  error: "invalid_parameter",
  parse: (raw) => (EVENT_TYPES.includes(raw) ? raw : undefined),
  expects: `one of ${EVENT_TYPES.join(", ")}`,
};

const TIME = timeParam("Inclusive; matches the event's `createdAt`.");

const EVENT_PARAMS: Readonly<Record<string, Param>> = Object.freeze({
  ...PAGE_PARAMS,
  type: TYPE,
  createdSince: TIME,
  createdUntil: TIME,
});

export const eventQuerySchema = (): TObject => querySchemaOf(EVENT_PARAMS);

export function parseEventQuery(rawQuery: string): EventQuery {
  const { values, texts } = parseParams(rawQuery, EVENT_PARAMS);
  const { since, until } = timeWindowOf(values);
  const { limit, cursor } = pageRequestOf(values);
  // Written out, not spread, as parseListQuery's is: V8 reads a spread's object slowly on the page's path.
  return { limit, cursor, type: values.get("type") as string | undefined, since, until, filterKey: filterKeyOf(texts) };
}
