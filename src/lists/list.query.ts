/**
 * A record list's query string: the paging parameters every list-like endpoint takes
 * (platform/query-string.ts) and the filters this collection's list accepts, read strictly.
 */
import type { TObject } from "@sinclair/typebox";
import { RELATIONS, type Collection, type Relation } from "../collections/define.js";
import { Id, Text } from "../collections/fields.js";
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

export interface ListQuery extends PageRequest {
  name: string | undefined;
  code: string | undefined;
  /** Inclusive bounds on the event date, in milliseconds. */
  since: number | undefined;
  until: number | undefined;
  relations: Partial<Record<Relation, string>>;
  /** Canonical form of every filter (all but limit and cursor), which a cursor is bound to. */
  filterKey: string;
}

const TIME = timeParam("Inclusive; matches the event date.");

const TEXT_EXPECTS = "text of 1 to 200 characters";

const FILTERS = {
  name: textParam(
    Text("Case-insensitive prefix of the name (on transactions, of `employeeName`). Orders by name, ascending."),
    "invalid_parameter",
    TEXT_EXPECTS,
  ),
  code: textParam(
    Text("Case-insensitive prefix of the code. Orders by code, ascending (by name when `name` is sent too)."),
    "invalid_parameter",
    TEXT_EXPECTS,
  ),
  createdSince: TIME,
  createdUntil: TIME,
  ...(Object.fromEntries(
    RELATIONS.map((r) => [
      r,
      textParam(
        Id(`Only records whose \`${r}\` is this.`),
        "invalid_parameter",
        "an identifier of 1 to 64 characters from A-Z a-z 0-9 . _ : -",
      ),
    ]),
  ) as Record<Relation, Param>),
};

/** The parameters a collection's list accepts, in the order the OpenAPI document shows them. */
function paramsOf(collection: Collection): Record<string, Param> {
  const window: Record<string, Param> =
    collection.eventField === undefined ? {} : { createdSince: FILTERS.createdSince, createdUntil: FILTERS.createdUntil };
  return {
    ...PAGE_PARAMS,
    name: FILTERS.name,
    ...(collection.codeField === undefined ? {} : ({ code: FILTERS.code } as Record<string, Param>)),
    ...window,
    ...Object.fromEntries(collection.relations.map((r) => [r, FILTERS[r]])),
  };
}

/** Made once per collection: every page reads them. */
const LIST_PARAMS = new Map<string, Readonly<Record<string, Param>>>();

function listParams(collection: Collection): Readonly<Record<string, Param>> {
  let params = LIST_PARAMS.get(collection.name);
  if (params === undefined) {
    params = Object.freeze(paramsOf(collection));
    LIST_PARAMS.set(collection.name, params);
  }
  return params;
}

/** The query schema of a collection's list, for the OpenAPI document. */
export function querySchema(collection: Collection): TObject {
  return querySchemaOf(listParams(collection));
}

export function parseListQuery(collection: Collection, rawQuery: string): ListQuery {
  const { values, texts } = parseParams(rawQuery, listParams(collection));
  const { since, until } = timeWindowOf(values);
  const relations: Partial<Record<Relation, string>> = {};
  for (const r of RELATIONS) if (values.has(r)) relations[r] = values.get(r) as string;
  const firstRelation = RELATIONS.find((r) => values.has(r));
  if ((since !== undefined || until !== undefined) && firstRelation !== undefined) {
    throw new ApiError(
      "window_with_relationship_filter",
      `the time window (createdSince, createdUntil) cannot be combined with ${firstRelation}; page the window alone and filter on your side`,
      { param: firstRelation },
    );
  }
  const { limit, cursor } = pageRequestOf(values);
  // Written out, not spread: the object is read all along the page's path, and a spread gave it
  // a shape that V8 reads slowly (docs/measurements.md).
  return {
    limit,
    cursor,
    name: values.get("name") as string | undefined,
    code: values.get("code") as string | undefined,
    since,
    until,
    relations,
    filterKey: filterKeyOf(texts),
  };
}
