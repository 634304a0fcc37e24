import type { Queryable } from "@orch/kit";

export interface MetricsRow {
  node_id: string;
  taken_at: number;
  cpu_percent: number;
  load1: number;
  load5: number;
  load15: number;
  memory_total: number;
  memory_used: number;
  disk_total: number;
  disk_used: number;
  net_rx_bytes: number;
  net_tx_bytes: number;
  uptime_seconds: number;
}

const METRIC_COLS = [
  "node_id",
  "taken_at",
  "cpu_percent",
  "load1",
  "load5",
  "load15",
  "memory_total",
  "memory_used",
  "disk_total",
  "disk_used",
  "net_rx_bytes",
  "net_tx_bytes",
  "uptime_seconds",
] as const;
const METRIC_TYPES = ["text", "bigint", ...Array(11).fill("float8")] as string[];

export const metricsDb = {
  /** One statement for a whole batch (column arrays + unnest); a repeated sample is ignored. */
  async insertMany(db: Queryable, rows: MetricsRow[]): Promise<void> {
    if (!rows.length) return;
    const arrays = METRIC_COLS.map((c) => rows.map((r) => r[c]));
    const unnest = METRIC_COLS.map((_c, i) => `$${i + 1}::${METRIC_TYPES[i]}[]`).join(", ");
    await db.query(
      `INSERT INTO metrics (${METRIC_COLS.join(", ")}) SELECT * FROM unnest(${unnest}) ON CONFLICT (node_id, taken_at) DO NOTHING`,
      arrays,
    );
  },
  async history(
    db: Queryable,
    nodeId: string,
    opts: { since: number; until: number; limit: number },
  ): Promise<MetricsRow[]> {
    return (
      await db.query<MetricsRow>(
        `SELECT ${METRIC_COLS.join(", ")} FROM metrics
          WHERE node_id = $1 AND taken_at >= $2 AND ($3::bigint = 0 OR taken_at < $3)
          ORDER BY taken_at DESC LIMIT $4`,
        [nodeId, opts.since, opts.until, opts.limit],
      )
    ).rows;
  },
  async latest(db: Queryable, nodeId: string): Promise<MetricsRow | undefined> {
    return (
      await db.query<MetricsRow>(
        `SELECT ${METRIC_COLS.join(", ")} FROM metrics WHERE node_id = $1 ORDER BY taken_at DESC LIMIT 1`,
        [nodeId],
      )
    ).rows[0];
  },
  /** Deletes at most `batch` rows older than the cutoff; returns how many. */
  async pruneBatch(db: Queryable, before: number, batch: number): Promise<number> {
    const r = await db.query(
      "DELETE FROM metrics WHERE ctid = ANY(ARRAY(SELECT ctid FROM metrics WHERE taken_at < $1 LIMIT $2))",
      [before, batch],
    );
    return r.rowCount ?? 0;
  },
};
