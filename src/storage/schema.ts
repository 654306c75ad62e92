/**
 * Table types for Kysely. Every time is integer milliseconds since the epoch, on both
 * engines, so a cursor carries the stored value exactly.
 */
import type { ColumnType, Generated } from "kysely";

export interface TenantTable {
  id: Generated<number>;
  slug: string;
  created_at: number;
  /** Requests a minute that each key of the tenant may make, reads and syncs apart; null: the defaults. */
  read_limit: number | null;
  sync_limit: number | null;
  /** The IANA time zone its usage reports count days, weeks and months in, unless one is asked for. */
  time_zone: ColumnType<string, string | undefined, string>;
}

export interface ApiKeyTable {
  key_id: string;
  tenant_id: number;
  hash: string;
  /** Comma-separated scopes: read, sync, admin. */
  scopes: string;
  created_at: number;
  revoked_at: number | null;
  /** What the key is for ("" for keys made before keys had names). */
  name: ColumnType<string, string | undefined, string>;
  expires_at: number | null;
  /** When it last authenticated a request, written about once a minute (tenants/key-usage.ts). */
  last_used_at: number | null;
}

export interface SettingTable {
  name: string;
  value: string;
}

/**
 * Every collection's table has this one shape; the columns a collection does not use stay
 * NULL. `body` is the record's normalised JSON (its API fields but `id`, `createdAt`,
 * `updatedAt`); the other columns are the keys the lists filter and order by.
 */
export interface RecordTable {
  tenant_id: number;
  id: string;
  created_at: number;
  updated_at: number;
  event_at: number | null;
  /** The event date again, only on a transaction stored long before or after it. */
  late_event_at: number | null;
  /** Lower-cased name (transactions: employee name), compared in code-point order. */
  name_key: string;
  code_key: string | null;
  employee_id: string | null;
  product_id: string | null;
  cost_center_id: string | null;
  sector_id: string | null;
  body: string;
}

export type RecordRow = RecordTable;

/** The record tables' columns, in the order cribline writes them. */
export const RECORD_COLUMNS = [
  "tenant_id",
  "id",
  "created_at",
  "updated_at",
  "event_at",
  "late_event_at",
  "name_key",
  "code_key",
  "employee_id",
  "product_id",
  "cost_center_id",
  "sector_id",
  "body",
] as const satisfies readonly (keyof RecordTable)[];

export interface WebhookEndpointTable {
  tenant_id: number;
  id: string;
  url: string;
  /** What an admin wrote the endpoint is for; null when none. */
  description: string | null;
  /** Event types, space-separated. */
  events: string;
  secret: string;
  previous_secret: string | null;
  previous_secret_until: number | null;
  disabled_at: number | null;
  disabled_reason: string | null;
  created_at: number;
  updated_at: number;
}

export interface WebhookMessageTable {
  tenant_id: number;
  id: string;
  type: string;
  created_at: number;
  /** The record announced. */
  record_id: string | null;
  /** The body to send, kept for master data; null for a transaction, whose record never changes (built when sent). */
  payload: string | null;
}

export interface WebhookDeliveryTable {
  tenant_id: number;
  id: string;
  endpoint_id: string;
  message_id: string;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: number | null;
  lease_until: number | null;
  created_at: number;
  updated_at: number;
}

/** The messages of one sync batch that one endpoint takes, until the delivery loop expands them. */
export interface WebhookFanoutTable {
  tenant_id: number;
  id: string;
  endpoint_id: string;
  created_at: number;
  message_ids: string;
}

/** A paused delivery waits for its endpoint to be enabled again. */
export type DeliveryStatus = "pending" | "succeeded" | "failed" | "paused";

export interface WebhookAttemptTable {
  tenant_id: number;
  id: string;
  delivery_id: string;
  endpoint_id: string;
  message_id: string;
  event_type: string;
  attempted_at: number;
  status_code: number | null;
  duration_ms: number;
  error: string | null;
  next_attempt_at: number | null;
}

/** What a usage report counts of a withdrawal (kind 1), return (2) or exchange (3), in event-date order. */
export interface UsageRecordTable {
  tenant_id: number;
  event_at: number;
  kind: number;
  record_id: string;
  cost_center_id: string;
  employee_id: string;
  product_id: string;
  sector_id: string;
  device_id: string;
  quantity: number;
}

/** One group's totals in one month of its tenant's time zone (month: year x 12 + month - 1). */
export interface UsageMonthTable {
  tenant_id: number;
  /** The field grouped by, as the API names it: `costCenterId`, `employeeId`, ... */
  field: string;
  month: number;
  group_id: string;
  withdrawals: number;
  withdrawn: number;
  returns: number;
  returned: number;
  exchanges: number;
  exchanged: number;
}

export interface Schema {
  tenants: TenantTable;
  api_keys: ApiKeyTable;
  settings: SettingTable;
  withdrawals: RecordTable;
  returns: RecordTable;
  exchanges: RecordTable;
  training_records: RecordTable;
  employees: RecordTable;
  cost_centers: RecordTable;
  sectors: RecordTable;
  products: RecordTable;
  devices: RecordTable;
  webhook_endpoints: WebhookEndpointTable;
  webhook_messages: WebhookMessageTable;
  webhook_deliveries: WebhookDeliveryTable;
  webhook_fanouts: WebhookFanoutTable;
  webhook_attempts: WebhookAttemptTable;
  usage_records: UsageRecordTable;
  usage_months: UsageMonthTable;
}
