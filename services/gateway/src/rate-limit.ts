import type { Clock } from "@orch/kit";

/** Token bucket per client address. Returns 0 when allowed, else ms until the next token. */
export function createRateLimiter(opts: { perMinute: number; clock: Clock }) {
  const buckets = new Map<string, { tokens: number; at: number }>();
  const rate = opts.perMinute / 60_000;
  return {
    take(key: string): number {
      const now = opts.clock.now();
      const b = buckets.get(key) ?? { tokens: opts.perMinute, at: now };
      b.tokens = Math.min(opts.perMinute, b.tokens + (now - b.at) * rate);
      b.at = now;
      if (buckets.size > 50_000) buckets.clear();
      if (b.tokens < 1) {
        buckets.set(key, b);
        return Math.ceil((1 - b.tokens) / rate);
      }
      b.tokens -= 1;
      buckets.set(key, b);
      return 0;
    },
  };
}
export type RateLimiter = ReturnType<typeof createRateLimiter>;
