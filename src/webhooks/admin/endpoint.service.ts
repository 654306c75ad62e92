/** Webhook endpoints as an admin manages them: a tenant's own, by id, or a 404. */
import type { Static } from "@sinclair/typebox";
import type { Kysely } from "kysely";
import { NoBody, readBody } from "../../platform/body.js";
import type { CursorCodec } from "../../platform/cursor.js";
import { ApiError } from "../../platform/errors.js";
import { readPage, type Page } from "../../platform/pager.js";
import type { PageRequest } from "../../platform/query-string.js";
import type { Schema } from "../../storage/schema.js";
import {
  changeEndpoint,
  deleteEndpoint,
  endpointPage,
  findEndpoint,
  insertEndpoint,
  rotateSecret,
  setEndpointDisabled,
  type EndpointRow,
} from "../endpoint.repository.js";
import { checkEndpointUrl, type Resolver } from "./endpoint-url.js";
import { ENDPOINT_RULES, EndpointBody, EndpointPatch, PATCH_RULES, ROTATION_RULES, RotationBody } from "./webhook.schema.js";

export function notFound(id: string): ApiError {
  return new ApiError("not_found", `no webhook endpoint with id ${JSON.stringify(id.slice(0, 100))}`);
}

export function noDelivery(endpointId: string, deliveryId: string): ApiError {
  return new ApiError("not_found", `endpoint ${endpointId} has no delivery with id ${JSON.stringify(deliveryId.slice(0, 100))}`);
}

/** What an endpoint's or a delivery's id is made of (see insertEndpoint, and ../ids.ts). */
const ID_ALPHABET = /^[A-Za-z0-9_-]{1,100}$/;

/**
 * An id in the path that cribline could not have made names nothing: 404 before any query.
 * PostgreSQL cannot even compare text holding a NUL (`%00`).
 */
export function checkIds({ id, deliveryId }: { id?: string; deliveryId?: string }): void {
  if (id !== undefined && !ID_ALPHABET.test(id)) throw notFound(id);
  if (deliveryId !== undefined && !ID_ALPHABET.test(deliveryId)) throw noDelivery(id ?? "", deliveryId);
}

function found(row: EndpointRow | undefined, id: string): EndpointRow {
  if (row === undefined) throw notFound(id);
  return row;
}

export async function getEndpoint(db: Kysely<Schema>, tenantId: number, id: string): Promise<EndpointRow> {
  return found(await findEndpoint(db, tenantId, id), id);
}

/** Registers an endpoint; the secret is returned only here. */
export async function createEndpoint(
  db: Kysely<Schema>,
  tenantId: number,
  body: unknown,
  allowPrivate: boolean,
  now: number,
  resolveHost?: Resolver,
): Promise<{ row: EndpointRow; secret: string }> {
  const input: Static<typeof EndpointBody> = readBody(EndpointBody, ENDPOINT_RULES, body);
  const url = await checkEndpointUrl(input.url, allowPrivate, resolveHost);
  const created = await insertEndpoint(db, tenantId, url, input.events, now, input.description ?? null);
  return { row: await getEndpoint(db, tenantId, created.id), secret: created.secret };
}

export async function endpointsPage(
  db: Kysely<Schema>,
  cursors: CursorCodec,
  tenantId: number,
  request: PageRequest,
): Promise<Page<EndpointRow>> {
  const paged = { list: "webhook-endpoints", filterKey: "[]", positionOf: (row: EndpointRow) => ({ key: row.created_at, id: row.id }) };
  return readPage(cursors, tenantId, paged, request, (after, take) => endpointPage(db, tenantId, after, take));
}

export async function removeEndpoint(db: Kysely<Schema>, tenantId: number, id: string): Promise<void> {
  if (!(await deleteEndpoint(db, tenantId, id))) throw notFound(id);
}

/** Why an admin's disable says it was disabled. */
export const DISABLED_BY_ADMIN = "disabled by an admin";

/**
 * Changes what the body names, checked as at creation (the URL's host resolved again); its
 * secret and its log stay. A body without a field is a 400.
 */
export async function updateEndpoint(
  db: Kysely<Schema>,
  tenantId: number,
  id: string,
  body: unknown,
  allowPrivate: boolean,
  now: number,
  resolveHost?: Resolver,
): Promise<EndpointRow> {
  const input = readBody(EndpointPatch, PATCH_RULES, body);
  if (Object.keys(input).length === 0) {
    throw new ApiError("invalid_body", `send at least one field to change: ${Object.keys(EndpointPatch.properties).join(", ")}`);
  }
  const url = input.url === undefined ? undefined : await checkEndpointUrl(input.url, allowPrivate, resolveHost);
  const change = { url, events: input.events, description: input.description, enabled: input.enabled };
  return found(await changeEndpoint(db, tenantId, id, change, DISABLED_BY_ADMIN, now), id);
}

/** Disables the endpoint (with the reason) or enables it (reason null). The action takes no body. */
export async function switchEndpoint(
  db: Kysely<Schema>,
  tenantId: number,
  id: string,
  body: unknown,
  reason: string | null,
  now: number,
): Promise<EndpointRow> {
  readBody(NoBody, {}, body);
  return found(await setEndpointDisabled(db, tenantId, id, reason, now), id);
}

export async function rotateEndpointSecret(
  db: Kysely<Schema>,
  tenantId: number,
  id: string,
  body: unknown,
  now: number,
): Promise<EndpointRow> {
  const { gracePeriodSeconds } = readBody(RotationBody, ROTATION_RULES, body);
  if (gracePeriodSeconds === undefined) throw new Error("readBody fills in the schema's default grace period");
  return found(await rotateSecret(db, tenantId, id, gracePeriodSeconds * 1000, now), id);
}
