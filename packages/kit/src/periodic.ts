import { hostname } from "node:os";
import { withJobLock, type Pool, type PoolClient } from "./db.js";
import type { Clock } from "./ids.js";
import type { Logger } from "./logger.js";

export interface Periodic {
  /** Runs the job now if its period has passed (under the lock); resolves whether it ran. */
  tick(): Promise<boolean>;
  stop(): void;
}

/**
 * A job that runs once per period across all replicas of a service. Every replica ticks; a tick
 * takes the job's advisory lock and runs only if the `jobs` row says the period has passed since
 * the last run by any replica. The lock alone would not do: a replica whose timer fires just after
 * another released it would run the job a second time in the same period.
 */
export function schedulePeriodic(
  deps: { pool: Pool; log: Logger; clock: Clock; replica?: string },
  name: string,
  intervalMs: number | (() => number),
  fn: (c: PoolClient) => Promise<void>,
): Periodic {
  const replica = deps.replica ?? `${hostname()}:${process.pid}`;
  const period = () => (typeof intervalMs === "function" ? intervalMs() : intervalMs);
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let stopped = false;

  async function tick(): Promise<boolean> {
    if (running || stopped || period() <= 0) return false;
    running = true;
    try {
      let ran = false;
      await withJobLock(deps.pool, name, async (c) => {
        const now = deps.clock.now();
        const r = await c.query<{ last_run_at: number }>("SELECT last_run_at FROM jobs WHERE name = $1", [name]);
        const last = r.rows[0]?.last_run_at ?? 0;
        if (now - last < period()) return;
        await fn(c);
        await c.query(
          "INSERT INTO jobs (name, last_run_at, last_replica) VALUES ($1, $2, $3) ON CONFLICT (name) DO UPDATE SET last_run_at = EXCLUDED.last_run_at, last_replica = EXCLUDED.last_replica",
          [name, now, replica],
        );
        ran = true;
      });
      return ran;
    } catch (err) {
      deps.log.warn({ err, job: name }, "periodic job failed");
      return false;
    } finally {
      running = false;
    }
  }

  const schedule = () => {
    if (stopped) return;
    // Tick several times per period (bounded) so a dead replica's share is picked up promptly.
    const every = Math.min(Math.max(period() / 4, 250), 60_000);
    timer = setTimeout(async () => {
      await tick();
      schedule();
    }, every);
    timer.unref();
  };
  schedule();

  return {
    tick,
    stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
    },
  };
}
