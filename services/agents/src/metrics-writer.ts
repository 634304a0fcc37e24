import type { MetricsSample } from "@orch/contracts";
import type { Clock, Logger, Pool } from "@orch/kit";
import { agentsDb } from "./db/agents.js";
import { metricsDb, type MetricsRow } from "./db/metrics.js";

/** Agent clocks drift; a sample stamped further than this from ours gets our time instead. */
const MAX_SKEW_MS = 5 * 60_000;

export function sampleToRow(nodeId: string, s: MetricsSample, now: number): MetricsRow {
  const num = (v: number) => (Number.isFinite(v) ? v : 0);
  const takenAt = Number.isFinite(s.takenAt) && Math.abs(s.takenAt - now) <= MAX_SKEW_MS ? Math.round(s.takenAt) : now;
  return {
    node_id: nodeId,
    taken_at: takenAt,
    cpu_percent: num(s.cpuPercent),
    load1: num(s.load1),
    load5: num(s.load5),
    load15: num(s.load15),
    memory_total: num(s.memoryTotal),
    memory_used: num(s.memoryUsed),
    disk_total: num(s.diskTotal),
    disk_used: num(s.diskUsed),
    net_rx_bytes: num(s.netRxBytes),
    net_tx_bytes: num(s.netTxBytes),
    uptime_seconds: num(s.uptimeSeconds),
  };
}

export interface MetricsWriter {
  add(nodeId: string, sample: MetricsSample): void;
  /** Writes what is buffered now. */
  flush(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * Thousands of agents each sending a sample every few seconds would be thousands of single-row
 * transactions; samples are buffered and written as one INSERT (plus one last_seen UPDATE) per tick.
 */
export function createMetricsWriter(deps: {
  pool: Pool;
  clock: Clock;
  log: Logger;
  intervalMs?: number;
  maxBatch?: number;
}): MetricsWriter {
  const maxBatch = deps.maxBatch ?? 2000;
  let buf: MetricsRow[] = [];
  let writing: Promise<void> = Promise.resolve();

  const flush = () => {
    writing = writing.then(async () => {
      while (buf.length) {
        const batch = buf.slice(0, maxBatch);
        buf = buf.slice(batch.length);
        try {
          await metricsDb.insertMany(deps.pool, batch);
          await agentsDb.touch(deps.pool, [...new Set(batch.map((r) => r.node_id))], deps.clock.now());
        } catch (err) {
          // Metrics are best effort: a database hiccup loses one tick, not the link.
          deps.log.warn({ err: (err as Error).message, samples: batch.length }, "metrics batch not written");
        }
      }
    });
    return writing;
  };
  const timer = setInterval(() => void flush(), deps.intervalMs ?? 1000);
  timer.unref();

  return {
    add(nodeId, sample) {
      buf.push(sampleToRow(nodeId, sample, deps.clock.now()));
      if (buf.length >= maxBatch) void flush();
    },
    flush,
    async stop() {
      clearInterval(timer);
      await flush();
    },
  };
}
