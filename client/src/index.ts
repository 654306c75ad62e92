/**
 * @cribline/client: a typed client of the cribline API for Node.js 20+ and browsers (it uses
 * `fetch` and Web Crypto, and has no dependencies). Every record, list, filter and error code
 * is typed from cribline's OpenAPI document (./openapi.ts, generated from the server's own
 * schemas by openapi-typescript; a test fails when it drifts).
 *
 *   const client = new CriblineClient({ baseUrl: "https://cribline.example.com", apiKey });
 *   for await (const w of client.withdrawals.list({ createdSince, createdUntil })) ...
 */
import { CriblineError, type Problem } from "./errors.js";
import type { components, operations } from "./openapi.js";
import { syncInBatches, type SyncCounts, type SyncResult } from "./sync.js";
import { Events } from "./events.js";
import { Usage } from "./usage.js";
import { pageAt, pagesOf, type Page, type PageOptions } from "./paging.js";
import { WebhookEndpoints } from "./webhook-endpoints.js";

export { CriblineError, type ErrorCode, type Problem } from "./errors.js";
export type { Page } from "./paging.js";
export { SyncError, type RecordError, type SyncBatch, type SyncCounts, type SyncResult } from "./sync.js";

type Schemas = components["schemas"];
/** The key a client sends, and its tenant (`client.currentKey()`). */
export type CurrentKey = Schemas["CurrentKey"];
export type Withdrawal = Schemas["Withdrawal"];
export type Return = Schemas["Return"];
export type Exchange = Schemas["Exchange"];
export type TrainingRecord = Schemas["TrainingRecord"];
export type Employee = Schemas["Employee"];
export type CostCenter = Schemas["CostCenter"];
export type Sector = Schemas["Sector"];
export type Product = Schemas["Product"];
export type Device = Schemas["Device"];

/** The lists, by path segment, with the operation that reads each and the input sync takes. */
interface Lists {
  withdrawals: { op: operations["listWithdrawals"]; item: Withdrawal; input: Schemas["WithdrawalInput"] };
  returns: { op: operations["listReturns"]; item: Return; input: Schemas["ReturnInput"] };
  exchanges: { op: operations["listExchanges"]; item: Exchange; input: Schemas["ExchangeInput"] };
  "training-records": { op: operations["listTrainingRecords"]; item: TrainingRecord; input: Schemas["TrainingRecordInput"] };
  employees: { op: operations["listEmployees"]; item: Employee; input: Schemas["EmployeeInput"] };
  "cost-centers": { op: operations["listCostCenters"]; item: CostCenter; input: Schemas["CostCenterInput"] };
  sectors: { op: operations["listSectors"]; item: Sector; input: Schemas["SectorInput"] };
  products: { op: operations["listProducts"]; item: Product; input: Schemas["ProductInput"] };
  devices: { op: operations["listDevices"]; item: Device; input: Schemas["DeviceInput"] };
}
export type ListName = keyof Lists;
/** Every list, by the path segment the API names it with. */
export const LIST_NAMES: readonly ListName[] = [
  "withdrawals",
  "returns",
  "exchanges",
  "training-records",
  "employees",
  "cost-centers",
  "sectors",
  "products",
  "devices",
];

type RawQuery<L extends ListName> = NonNullable<Lists[L]["op"]["parameters"]["query"]>;
type Relation = "employeeId" | "productId" | "costCenterId" | "sectorId";
type Window = "createdSince" | "createdUntil";
/**
 * A list's filters, `limit` and `cursor` aside (the client pages itself). The time window and
 * the relationship filters exclude each other, as the API says: both in one query is a compile
 * error, as is a filter the list does not take.
 */
export type ListFilters<L extends ListName> = Window extends keyof RawQuery<L>
  ?
      | (Omit<RawQuery<L>, "limit" | "cursor" | Relation> & { [K in Relation]?: never })
      | (Omit<RawQuery<L>, "limit" | "cursor" | Window> & { [K in Window]?: never })
  : Omit<RawQuery<L>, "limit" | "cursor">;

export interface ClientOptions {
  /** Where cribline answers, such as `https://cribline.example.com`. */
  baseUrl: string;
  apiKey: string;
  /** Each request's time limit, attempts of retries apart (default 30 s). */
  timeoutMs?: number;
  /** Retries after a 429 or 503 (waiting for its Retry-After) or a network error (backing off, with jitter). Default 5. */
  maxRetries?: number;
  /** The longest wait before a retry, whatever Retry-After says (default 60 s). */
  maxRetryDelayMs?: number;
  /** fetch to use (default: the global one). */
  fetch?: typeof fetch;
}

export interface RequestOptions {
  /** Aborts the request and its retries. */
  signal?: AbortSignal;
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => (clearTimeout(timer), reject(signal.reason)), { once: true });
  });

/** One list of the API: walk it whole, or a page at a time. */
export class ListResource<L extends ListName> {
  constructor(
    private readonly client: CriblineClient,
    readonly name: L,
  ) {}

  /** One page: the filters, and the cursor of the previous page (none for the first). */
  page(filters: ListFilters<L> = {} as ListFilters<L>, options: PageOptions = {}): Promise<Page<Lists[L]["item"]>> {
    return pageAt(this.client, `/v1/${this.name}`, filters, options);
  }

  /** Every page in turn, until the cursor is null. */
  pages(
    filters: ListFilters<L> = {} as ListFilters<L>,
    options: RequestOptions & { limit?: number } = {},
  ): AsyncGenerator<Page<Lists[L]["item"]>> {
    return pagesOf((cursor) => this.page(filters, { ...options, cursor }));
  }

  /** Every item of the list, page after page (`limit` per request, 100 by default). */
  async *list(
    filters: ListFilters<L> = {} as ListFilters<L>,
    options: RequestOptions & { limit?: number } = {},
  ): AsyncGenerator<Lists[L]["item"]> {
    for await (const page of this.pages(filters, { limit: 100, ...options })) yield* page.data;
  }

  /**
   * Sends records to the list's sync endpoint, in batches of at most 1,000 (retried as any
   * request: sync is idempotent). The result sums the batches and lists what each did. A
   * failure is a SyncError: the batches stored before it, the batch that failed, and every
   * record at fault by its index in `records`; what the client can check of the whole input
   * (an id twice, an id of the wrong shape) it refuses before sending anything.
   */
  sync(records: readonly Lists[L]["input"][], options: RequestOptions = {}): Promise<SyncResult> {
    return syncInBatches(
      records,
      async (data) => (await this.client.request("POST", `/v1/sync/${this.name}`, { data }, options)) as SyncCounts,
    );
  }
}

export class CriblineClient {
  readonly withdrawals = new ListResource(this, "withdrawals");
  readonly returns = new ListResource(this, "returns");
  readonly exchanges = new ListResource(this, "exchanges");
  readonly trainingRecords = new ListResource(this, "training-records");
  readonly employees = new ListResource(this, "employees");
  readonly costCenters = new ListResource(this, "cost-centers");
  readonly sectors = new ListResource(this, "sectors");
  readonly products = new ListResource(this, "products");
  readonly devices = new ListResource(this, "devices");
  /** Every change of the tenant's records, newest first (a `read` key). */
  readonly events = new Events(this);
  readonly usage = new Usage(this);
  /** Webhook endpoints (an `admin` key). */
  readonly webhookEndpoints = new WebhookEndpoints(this);
  private readonly options: Required<Omit<ClientOptions, "fetch">> & { fetch: typeof fetch };

  constructor(options: ClientOptions) {
    this.options = {
      timeoutMs: 30_000,
      maxRetries: 5,
      maxRetryDelayMs: 60_000,
      fetch: globalThis.fetch.bind(globalThis),
      ...options,
      baseUrl: options.baseUrl.replace(/\/+$/, ""),
    };
  }

  /** The key this client sends: its id, name, scopes and expiry, and its tenant's slug and time zone (any valid key). */
  currentKey(options: RequestOptions = {}): Promise<CurrentKey> {
    return this.request("GET", "/v1/key", undefined, options) as Promise<CurrentKey>;
  }

  /** One request, retried as ClientOptions say; the parsed body, or a CriblineError. */
  async request(method: string, path: string, body?: unknown, { signal }: RequestOptions = {}): Promise<unknown> {
    const { maxRetries, maxRetryDelayMs, timeoutMs } = this.options;
    for (let attempt = 0; ; attempt += 1) {
      let failure: CriblineError;
      let wait: number;
      try {
        const limit = AbortSignal.timeout(timeoutMs);
        const response = await this.options.fetch(`${this.options.baseUrl}${path}`, {
          method,
          headers: {
            authorization: `Bearer ${this.options.apiKey}`,
            ...(body === undefined ? {} : { "content-type": "application/json" }),
          },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: signal === undefined ? limit : AbortSignal.any([signal, limit]),
        });
        const text = await response.text();
        if (response.ok) return text === "" ? undefined : JSON.parse(text);
        failure = errorOf(response, text);
        if (response.status !== 429 && response.status !== 503) throw failure;
        const retryAfter = Number(response.headers.get("retry-after"));
        wait = Number.isFinite(retryAfter) && retryAfter >= 0 ? retryAfter * 1000 : backoff(attempt);
      } catch (error) {
        if (error instanceof CriblineError) throw error;
        if (signal?.aborted) throw signal.reason;
        const timedOut = error instanceof DOMException && error.name === "TimeoutError";
        failure = timedOut
          ? new CriblineError(0, "timeout", `no answer within ${timeoutMs} ms: ${method} ${path}`, undefined, undefined)
          : new CriblineError(
              0,
              "network_error",
              `could not reach ${shown(this.options.baseUrl)}: ${reasonOf(error)}`,
              undefined,
              undefined,
            );
        wait = backoff(attempt);
      }
      if (attempt >= maxRetries) throw failure;
      await sleep(Math.min(wait, maxRetryDelayMs), signal);
    }
  }
}

/** The server's address for a message: without credentials a URL may carry. */
function shown(baseUrl: string): string {
  try {
    const url = new URL(baseUrl);
    url.username = "";
    url.password = "";
    return url.href.replace(/\/+$/, "");
  } catch {
    return baseUrl;
  }
}

/** Why fetch failed: Node's "fetch failed" says nothing; its cause has the system's code (ECONNREFUSED, ENOTFOUND...). */
function reasonOf(error: unknown): string {
  const cause = error instanceof Error ? (error.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  if (typeof cause?.code === "string") return cause.code;
  if (typeof cause?.message === "string") return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/** Exponential backoff with full jitter: up to 0.5 s, 1 s, 2 s, ... 30 s. */
function backoff(attempt: number): number {
  return Math.random() * Math.min(30_000, 500 * 2 ** attempt);
}

function errorOf(response: Response, text: string): CriblineError {
  const requestId = response.headers.get("x-request-id") ?? undefined;
  try {
    const problem = JSON.parse(text) as Problem;
    return new CriblineError(response.status, problem.code, problem.detail, problem.param, requestId, problem);
  } catch {
    return new CriblineError(response.status, "internal_error", text.slice(0, 200) || response.statusText, undefined, requestId);
  }
}

export { verifyWebhook, WebhookVerificationError, type WebhookEvent } from "./webhooks.js";
export { Events, type Event, type EventFilters } from "./events.js";
export { Usage, type UsageParams, type UsageRow } from "./usage.js";
export { WebhookEndpoints, type WebhookEndpoint, type WebhookEndpointPatch, type WebhookTest } from "./webhook-endpoints.js";
