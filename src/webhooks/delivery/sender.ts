/** Sends one delivery taken in a round: its message, signed with the endpoint's secrets. */
import { signingSecrets, webhookHeaders } from "../signature.js";
import type { DeliveryOptions } from "./delivery.options.js";
import { post, type SendResult } from "./http-post.js";
import type { Taken } from "./lease.repository.js";
import { keyOf, type Loaded } from "./payload.repository.js";

/** What came of one attempt. */
export interface Outcome {
  taken: Taken;
  eventType: string;
  result: SendResult;
  /** No later attempt could do better (the endpoint or the message is gone): the delivery fails now. */
  final: boolean;
  /** When the attempt ended. */
  at: number;
}

/** Resolves with what came of the attempt; it never rejects for the receiver's sake. */
export async function send(
  taken: Taken,
  round: Loaded,
  options: Pick<DeliveryOptions, "clock" | "timeoutMs" | "allowPrivate">,
): Promise<Outcome> {
  const message = round.messages.get(keyOf(taken.tenant_id, taken.message_id));
  const endpoint = round.endpoints.get(keyOf(taken.tenant_id, taken.endpoint_id));
  if (message?.payload == null) {
    // Not kept any more (retention never prunes what a delivery names): it fails and is
    // logged, rather than being taken again every lease for ever.
    const result = { error: `its message ${taken.message_id} is no longer kept`, durationMs: 0 };
    return { taken, eventType: message?.type ?? "unknown", result, final: true, at: options.clock() };
  }
  const sentAt = options.clock();
  let result: SendResult;
  if (endpoint === undefined) {
    result = { error: "the endpoint was deleted", durationMs: 0 };
  } else {
    const headers = webhookHeaders(signingSecrets(endpoint, sentAt), taken.message_id, Math.floor(sentAt / 1000), message.payload);
    result = await post(endpoint.url, headers, message.payload, options);
  }
  return { taken, eventType: message.type, result, final: endpoint === undefined, at: options.clock() };
}
