/**
 * The key's tenant's webhook endpoints (a key with the `admin` scope): `client.webhookEndpoints`.
 * docs/webhooks.md says what each change does.
 */
import type { CriblineClient, RequestOptions } from "./index.js";
import type { components, operations } from "./openapi.js";

/** An endpoint as the API shows it: never its secret. */
export type WebhookEndpoint = components["schemas"]["WebhookEndpoint"];
/** What came of a test event sent to an endpoint (`test`). */
export type WebhookTest = components["schemas"]["WebhookTest"];
/** What to change of an endpoint, at least one of `url`, `events`, `description` (null removes it), `enabled`; the rest stays. */
export type WebhookEndpointPatch = operations["updateWebhookEndpoint"]["requestBody"]["content"]["application/json"];

export class WebhookEndpoints {
  constructor(private readonly client: CriblineClient) {}

  /**
   * Changes an endpoint, checked as at its creation (a CriblineError with `invalid_url`,
   * `private_address`, `unknown_event`, `invalid_body` or `not_found` otherwise); its secret and
   * attempt log stay. Returns the endpoint as it is then.
   */
  update(id: string, patch: WebhookEndpointPatch, options: RequestOptions = {}): Promise<WebhookEndpoint> {
    return this.client.request("PATCH", `/v1/webhook-endpoints/${encodeURIComponent(id)}`, patch, options) as Promise<WebhookEndpoint>;
  }

  /**
   * Sends the endpoint a signed `ping` event now and returns what came of it (`status`,
   * `responseCode`, `durationMs`, `error`); nothing is stored. A CriblineError with `not_found`
   * for an endpoint the tenant has not.
   */
  test(id: string, options: RequestOptions = {}): Promise<WebhookTest> {
    return this.client.request("POST", `/v1/webhook-endpoints/${encodeURIComponent(id)}/test`, undefined, options) as Promise<WebhookTest>;
  }
}
