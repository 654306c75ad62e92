/** An endpoint's attempt: what was sent (the event, to a key that may read events) and what came back. */
import { useEffect, useState } from "preact/hooks";
import { api, type KeyInUse } from "./api.ts";
import { Details, ErrorNote, inZone } from "./parts.tsx";

export interface Attempt {
  id: string;
  deliveryId: string;
  webhookId: string;
  eventType: string;
  attemptedAt: string;
  status: string;
  responseCode: number | null;
  durationMs: number;
  error: string | null;
  nextAttemptAt: string | null;
}

export function AttemptView({ who, attempt, onClose }: { who: KeyInUse; attempt: Attempt; onClose: () => void }) {
  const [sent, setSent] = useState<unknown>();
  const [error, setError] = useState<unknown>();
  const mayRead = who.scopes.includes("read");
  useEffect(() => {
    if (!mayRead) return;
    api("GET", `/v1/events/${encodeURIComponent(attempt.webhookId)}`).then(setSent, setError);
  }, [attempt.webhookId]);
  return (
    <>
      <Details
        title={`Attempt ${attempt.id}`}
        value={{
          request: `POST, webhook-id ${attempt.webhookId}, ${attempt.eventType}`,
          response: attempt.responseCode === null ? "no answer" : `HTTP ${attempt.responseCode} in ${attempt.durationMs} ms`,
          error: attempt.error ?? "none",
          attemptedAt: inZone(who.timeZone, attempt.attemptedAt),
          nextAttemptAt: inZone(who.timeZone, attempt.nextAttemptAt) || "none",
        }}
        onClose={onClose}
      />
      <section aria-label="The event sent">
        <h3>The event sent</h3>
        {mayRead ? (
          <pre>{sent === undefined ? "" : JSON.stringify(sent, null, 2)}</pre>
        ) : (
          <p>A key with the read scope shows the event sent.</p>
        )}
        <ErrorNote error={error} />
      </section>
    </>
  );
}
