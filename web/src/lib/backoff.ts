/**
 * Reconnect delays for live streams: exponential with full jitter, capped, so many consoles
 * reconnecting after a gateway restart do not arrive together. `random` is injected for tests.
 */
export function backoffDelay(attempt: number, opts: { baseMs?: number; maxMs?: number; random?: () => number } = {}) {
  const base = opts.baseMs ?? 1000;
  const max = opts.maxMs ?? 30_000;
  const random = opts.random ?? Math.random;
  const ceiling = Math.min(max, base * 2 ** Math.max(0, attempt));
  // Never below half the ceiling: full jitter alone can retry at once, which hammers a gateway that is down.
  return Math.round(ceiling / 2 + (random() * ceiling) / 2);
}
