import type { Outcome } from "./attempt.js";
import type { DeliveryResult } from "./metrics.js";

/** What one attempt's outcome means for its delivery. */
export type Verdict =
  | { type: "delivered"; status: number }
  /** 410 Gone: the delivery fails and its channel is disabled. */
  | { type: "gone"; status: number; error: string }
  /** Final failure; `refused` when the address policy refused the target. */
  | { type: "give_up"; status: number; error: string; refused: boolean }
  | { type: "retry"; status: number; error: string; retryAfterMs: number | undefined };

/**
 * Pure: judges `o`, the outcome of the delivery's `attempts`-th attempt (1-based), given at most
 * `maxAttempts`. The worker performs the verdict; `result` is the metric label (a retry out of
 * attempts counts as failed).
 */
export function judge(o: Outcome, attempts: number, maxAttempts: number): { verdict: Verdict; result: DeliveryResult } {
  switch (o.kind) {
    case "delivered":
      return { verdict: { type: "delivered", status: o.status }, result: "delivered" };
    case "gone":
      return { verdict: { type: "gone", status: o.status, error: o.error }, result: "gone" };
    case "refused":
      // Retrying would not change the policy's answer.
      return { verdict: { type: "give_up", status: 0, error: o.error, refused: true }, result: "refused" };
    case "retry":
      if (attempts >= maxAttempts)
        return { verdict: { type: "give_up", status: o.status, error: o.error, refused: false }, result: "failed" };
      return {
        verdict: {
          type: "retry",
          status: o.status,
          error: o.snippet ? `${o.error}: ${o.snippet}` : o.error,
          retryAfterMs: o.retryAfterMs,
        },
        result: "retry",
      };
  }
}
