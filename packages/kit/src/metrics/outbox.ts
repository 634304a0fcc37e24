import type { Registry } from "prom-client";
import type { Queryable } from "../db.js";
import { metric } from "./names.js";

/** A scrape must not hang on a slow or absent database; the gauges then keep their last value. */
const QUERY_TIMEOUT_MS = 2000;

/**
 * orch_outbox_backlog and orch_outbox_relay_lag_seconds, read at scrape time from the service's
 * outbox table (on its search_path). Both gauges share one query per scrape: the relay deletes a
 * row once published, so every row left is backlog, and the oldest row's age is the relay's lag.
 */
export function registerOutboxMetrics(registry: Registry, pool: Queryable): void {
  let inflight: Promise<{ n: number; lag: number } | undefined> | undefined;
  const sample = () => {
    inflight ??= Promise.race([
      pool
        .query<{ n: number; lag: number }>(
          "SELECT count(*)::int AS n, COALESCE(EXTRACT(EPOCH FROM now() - min(created_at)), 0)::float8 AS lag FROM outbox",
        )
        .then((r) => r.rows[0]),
      new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), QUERY_TIMEOUT_MS).unref()),
    ])
      .catch(() => undefined)
      .finally(() => {
        inflight = undefined;
      });
    return inflight;
  };
  metric(registry, "orch_outbox_backlog", {
    async collect() {
      const s = await sample();
      if (s) this.set(s.n);
    },
  });
  metric(registry, "orch_outbox_relay_lag_seconds", {
    async collect() {
      const s = await sample();
      if (s) this.set(Math.max(0, s.lag));
    },
  });
}
