/**
 * How a delay is randomised:
 * - "none": the exponential delay itself (one process retrying its own dependency);
 * - "full": uniform in [0, delay) — many clients recovering from one outage spread over the window;
 * - "equal": half fixed, half random — spread out, yet never much sooner than the delay;
 * - a fraction r: the delay times a uniform factor in [1 - r, 1 + r].
 */
export type Jitter = "none" | "full" | "equal" | number;

export interface BackoffOptions {
  /** The delay before the first retry (before jitter). */
  initialMs: number;
  /** The exponential part stops growing here (a fractional jitter may still exceed it). */
  maxMs: number;
  /** Growth per retry; 2 unless said. */
  factor?: number;
  jitter?: Jitter;
  /** Uniform in [0, 1); injected by tests. */
  random?: () => number;
}

/** The delay in ms before retry number `attempt` (0 = the first retry). */
export type Backoff = (attempt: number) => number;

/** An exponential backoff policy: `initialMs · factor^attempt`, capped at `maxMs`, then jittered. */
export function backoff(o: BackoffOptions): Backoff {
  const factor = o.factor ?? 2;
  const jitter = o.jitter ?? "none";
  const random = o.random ?? Math.random;
  return (attempt) => {
    // Bounded exponent: a loop that has failed for days must not overflow to Infinity or NaN.
    const exp = Math.min(o.maxMs, o.initialMs * factor ** Math.min(Math.max(0, attempt), 64));
    switch (jitter) {
      case "none":
        return exp;
      case "full":
        return Math.floor(random() * exp);
      case "equal":
        return Math.round(exp / 2 + (random() * exp) / 2);
      default:
        return Math.round(exp * (1 - jitter + 2 * jitter * random()));
    }
  };
}

export interface RetryOptions {
  policy: Backoff;
  /** Calls of `fn` in all, the first included; unbounded unless said. */
  attempts?: number;
  /**
   * Aborting ends the retries: a wait ends at once and rejects with the signal's reason, and `fn`
   * is not called again. The first call is made even when already aborted, so work in hand at
   * shutdown still gets its one try.
   */
  signal?: AbortSignal;
  /**
   * Told of every failure that will be retried (log it here). Throwing from it ends the retries
   * with that error, which is how errors that retrying cannot fix are let through.
   */
  onError?: (err: unknown, attempt: number, delayMs: number) => void;
  /** Injected by tests; an abortable timer unless said. */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
}

/**
 * Calls `fn` until it resolves, waiting `policy(n)` after the n-th failure (0-based). The last
 * failure is rethrown when `attempts` run out. `fn` gets the 0-based attempt number.
 */
export async function retry<T>(fn: (attempt: number) => Promise<T>, o: RetryOptions): Promise<T> {
  const sleep = o.sleep ?? abortableSleep;
  const attempts = o.attempts ?? Number.POSITIVE_INFINITY;
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn(attempt);
    } catch (err) {
      if (attempt + 1 >= attempts) throw err;
      o.signal?.throwIfAborted();
      const delay = o.policy(attempt);
      o.onError?.(err, attempt, delay);
      await sleep(delay, o.signal);
    }
  }
}

/** Resolves after `ms`, or rejects with the signal's reason as soon as it is aborted. */
export function abortableSleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
