import { cpus, loadavg } from "node:os";

/**
 * How much longer than its base a test's wait for the system may take: ORCH_TEST_WAIT_FACTOR when
 * set (a positive number), else the machine's load per core (1-minute load average ÷ cores)
 * between 1 and 4, so a suite beside `npm run up` or on a busy CI runner waits longer instead of
 * failing on a timeout tuned for an idle laptop. Read at each wait, so it follows the load.
 */
export function waitFactor(): number {
  const set = Number(process.env.ORCH_TEST_WAIT_FACTOR);
  if (Number.isFinite(set) && set > 0) return set;
  const perCore = loadavg()[0]! / Math.max(1, cpus().length);
  return Math.min(MAX_AUTO_FACTOR, Math.max(1, perCore));
}

/** The automatic factor's ceiling: past it a wait that still fails is a bug, not load. */
const MAX_AUTO_FACTOR = 4;

/** `baseMs` scaled by waitFactor(): the budget of a wait for the system to do something. */
export function waitMs(baseMs: number): number {
  return Math.round(baseMs * waitFactor());
}

/**
 * `p`, or a rejection naming `what` when it takes longer than `ms`. The timer is cleared once `p`
 * settles: a pending one would keep the test's process alive for the rest of `ms` after its last
 * test ended (a minute of idle CI time per file).
 */
export async function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, rej) => {
    timer = setTimeout(() => rej(new Error(`${what}: not within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, late]);
  } finally {
    clearTimeout(timer);
  }
}
