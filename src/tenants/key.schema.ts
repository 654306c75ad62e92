/**
 * The shapes of the keys API (/v1/api-keys), each one TypeBox schema: the body a key is made
 * with, checked (platform/body.ts) and documented, and the answers, never with a key's hash.
 */
import { Type } from "@sinclair/typebox";
import { DateTime, Nullable, StringEnum } from "../collections/fields.js";
import type { FieldRules } from "../platform/body.js";
import { SCOPES } from "../platform/keys.js";

const keyFields = {
  id: Type.String({ description: "The key's public id: `crib_` and its first 8 characters. Revoke it by this id." }),
  name: Type.String({ description: "What the key is for, as its creator named it." }),
  scopes: Type.Array(Type.String(), { description: "What it may do: `read` (lists), `sync`, `admin` (webhooks and keys)." }),
  createdAt: DateTime("When it was made."),
  expiresAt: Nullable(DateTime("From then on it is refused (401); null: it does not expire.")),
  lastUsedAt: Nullable(DateTime("When it last authenticated a request, to within about a minute; null: never.")),
  revokedAt: Nullable(DateTime("When it was revoked; null while it is valid.")),
};

export const ApiKey = Type.Object(keyFields, {
  $id: "ApiKey",
  additionalProperties: false,
  description: "An API key of the tenant, without its secret.",
});

export const ApiKeyWithSecret = Type.Object(
  { ...keyFields, key: Type.String({ description: "The key itself, `crib_...`: shown only here, stored only as a hash; keep it safe." }) },
  { $id: "ApiKeyWithSecret", additionalProperties: false, description: "A new key, with its secret." },
);

export const CurrentKey = Type.Object(
  {
    ...keyFields,
    tenant: Type.String({ description: "The slug of the key's tenant." }),
    timeZone: Type.String({ description: "The tenant's time zone (IANA), which usage reports count in unless asked otherwise." }),
  },
  { $id: "CurrentKey", additionalProperties: false, description: "The key a request was made with, and its tenant." },
);

export const KEY_SCHEMAS = [ApiKey, ApiKeyWithSecret, CurrentKey];

export const KeyBody = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 100, examples: ["nightly export"] }),
    scopes: Type.Array(StringEnum(SCOPES), { minItems: 1, uniqueItems: true, examples: [["read"]] }),
    expiresAt: Type.Optional(DateTime("When the key stops working; in the future. Left out: never.")),
  },
  { additionalProperties: false },
);

export const KEY_RULES: FieldRules<typeof KeyBody> = {
  name: { code: "invalid_body", expects: "a name of 1 to 100 characters" },
  scopes: { code: "invalid_body", expects: `a non-empty list of scopes, each once; the scopes are ${SCOPES.join(", ")}` },
  expiresAt: { code: "invalid_time", expects: "an RFC 3339 date-time with time and zone in the future, such as 2027-01-01T00:00:00Z" },
};

export const KeyIdParams = Type.Object({ id: Type.String() });
