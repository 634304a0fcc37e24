import { waitFactor } from "./wait.js";

/**
 * Polls until `fn` returns a truthy value or the timeout passes. `timeoutMs` is a base scaled by
 * waitFactor() (ORCH_TEST_WAIT_FACTOR, or the machine's load), so callers write what an idle
 * machine needs.
 */
export async function eventually<T>(
  fn: () => Promise<T | undefined | null | false> | T | undefined | null | false,
  timeoutMs = 10_000,
  stepMs = 50,
): Promise<T> {
  const factor = waitFactor();
  const budget = Math.round(timeoutMs * factor);
  const until = Date.now() + budget;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > until) {
      const scaled = factor === 1 ? "" : ` (${timeoutMs} ms × wait factor ${factor.toFixed(2)})`;
      throw new Error(
        `condition not met within ${budget} ms${scaled}${lastErr ? `: ${(lastErr as Error).message}` : ""}`,
      );
    }
    await new Promise((r) => setTimeout(r, stepMs));
  }
}
