import { backoff } from "@orch/kit/backoff";

export interface BackoffOptions {
  baseMs: number;
  capMs: number;
  random?: () => number;
}

export const LINK_BACKOFF: BackoffOptions = { baseMs: 500, capMs: 30_000 };

/**
 * "Full jitter": a uniform delay in [0, min(cap, base·2^attempt)]. After an outage thousands of
 * agents spread their reconnects over the whole window instead of arriving together.
 */
export function backoffDelay(attempt: number, o: BackoffOptions = LINK_BACKOFF): number {
  return backoff({ initialMs: o.baseMs, maxMs: o.capMs, jitter: "full", random: o.random })(attempt);
}
