import { backoff, OrchError, retry, type Logger } from "@orch/kit";

/**
 * How long a driver keeps retrying a write Postgres cannot take yet. Past HEARTBEAT_STALE_MS (60 s)
 * the sweep ends the run as interrupted anyway, so waiting longer would only hold the driver.
 */
export const DB_RETRY_MS = 60_000;

const POLICY = backoff({ initialMs: 200, maxMs: 2000 });

/** A raw database error that waiting cures: the server is down, restarting or the pool timed out. */
export function databaseAway(err: unknown): boolean {
  if (err instanceof OrchError) return false;
  const e = OrchError.from(err);
  return e.code === "UNAVAILABLE" || e.code === "DEADLINE_EXCEEDED";
}

/**
 * Runs a write of work already done (an agent's answer, a run's end) until Postgres takes it:
 * the result lives only in this process, so giving up at the first refused connection loses it
 * and leaves the run `running` until the sweep calls it interrupted. Each write retried here is
 * idempotent (guarded by the row's status), so a retry after a commit whose reply was lost is a no-op.
 */
export function untilStored<T>(log: Logger, what: string, fn: () => Promise<T>): Promise<T> {
  const until = Date.now() + DB_RETRY_MS;
  return retry(fn, {
    policy: POLICY,
    onError: (err, attempt) => {
      if (!databaseAway(err) || Date.now() > until) throw err;
      if (attempt === 0) log.warn({ err: (err as Error).message, what }, "database away; retrying the write");
    },
  });
}
