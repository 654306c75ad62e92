/** The problem+json error shape (RFC 9457): one schema for the OpenAPI document and the type. */
import { Type, type Static } from "@sinclair/typebox";
import { ERRORS, type ErrorCode } from "./error-codes.js";

export const Problem = Type.Object(
  {
    type: Type.Literal("about:blank"),
    status: Type.Integer(),
    title: Type.String(),
    detail: Type.String({ description: "What went wrong, for a person to read." }),
    code: Type.Union(
      (Object.keys(ERRORS) as ErrorCode[]).map((code) => Type.Literal(code)),
      { description: "Stable, machine-readable error code." },
    ),
    param: Type.Optional(Type.String({ description: "The query parameter at fault." })),
    errors: Type.Optional(
      Type.Array(Type.Object({ index: Type.Integer(), field: Type.String(), message: Type.String() }), {
        description: "Sync: each invalid record's index in `data` and the field at fault.",
      }),
    ),
    ids: Type.Optional(Type.Array(Type.String(), { description: "Sync: ids of stored transactions whose content differs." })),
  },
  { $id: "Problem", description: "An error, as application/problem+json (RFC 9457)." },
);

export type ProblemBody = Static<typeof Problem>;

export const PROBLEM_CONTENT_TYPE = "application/problem+json; charset=utf-8";

const DESCRIPTIONS: Record<number, string> = {
  400: "Bad request: the `code` says which rule was broken.",
  401: "Missing, malformed, unknown or revoked API key.",
  403: "The API key lacks the scope this endpoint needs.",
  404: "No such resource for this API key's tenant.",
  409: "A transaction with this id is stored with other content; nothing of the batch was applied.",
  413: "The request body is too large.",
  415: "The request body is not JSON.",
};

/** Response entries for the given error statuses; `[status, description]` words one for its endpoint. */
export function problemResponses(...statuses: (number | [number, string])[]) {
  return Object.fromEntries(
    statuses.map((entry) => {
      const [status, description] = typeof entry === "number" ? [entry, DESCRIPTIONS[entry]] : entry;
      return [status, { description, content: { "application/problem+json": { schema: Type.Ref(Problem) } } }];
    }),
  );
}
