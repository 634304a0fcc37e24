import { metric, type MetricsRegistry, type Queryable } from "@orch/kit";

/** A scrape must not hang on a slow database; the gauge then keeps its last value. */
const QUERY_TIMEOUT_MS = 2000;

/**
 * The agents service's own gauges, read at scrape time: links held by this replica (in memory)
 * and agents awaiting approval (one count on the agents_status index, shared by all replicas).
 */
export function registerAgentsMetrics(registry: MetricsRegistry, deps: { pool: Queryable; links: () => number }) {
  metric(registry, "orch_agents_links", {
    collect() {
      this.set(deps.links());
    },
  });
  metric(registry, "orch_agents_pending", {
    async collect() {
      const n = await Promise.race([
        deps.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM agents WHERE status = 'pending'").then(
          (r) => r.rows[0]?.n,
          () => undefined,
        ),
        new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), QUERY_TIMEOUT_MS).unref()),
      ]);
      if (n !== undefined) this.set(n);
    },
  });
}
