import { backoff } from "@orch/kit";

/**
 * Webhook retry timing: the delay after the `attempt`-th failed attempt (1-based). Exponential from
 * `baseMs`, capped at `maxMs`, with "equal jitter" (half fixed, half random) so receivers
 * recovering from an outage are not hit by every retry at once.
 */
export function retryDelay(attempt: number, baseMs: number, maxMs: number, rand: () => number = Math.random): number {
  return backoff({ initialMs: baseMs, maxMs, jitter: "equal", random: rand })(attempt - 1);
}

/** `Retry-After` as a delay in ms: delta-seconds or an HTTP date; undefined when absent or unparsable. */
export function parseRetryAfter(value: string | string[] | undefined, now: number): number | undefined {
  const v = Array.isArray(value) ? value[0] : value;
  if (!v) return undefined;
  if (/^\s*\d+\s*$/.test(v)) return Number(v) * 1000;
  const t = Date.parse(v);
  return Number.isFinite(t) ? Math.max(0, t - now) : undefined;
}

/** When to try again: the backoff, or later if the receiver asked (bounded by `maxMs`). */
export function nextAttemptAt(
  now: number,
  attempt: number,
  retryAfterMs: number | undefined,
  baseMs: number,
  maxMs: number,
  rand?: () => number,
): number {
  const backoff = retryDelay(attempt, baseMs, maxMs, rand);
  return now + Math.max(backoff, Math.min(retryAfterMs ?? 0, maxMs));
}
