/**
 * Metrics samples (newest first, as the API answers) → chart columns (oldest first, as uPlot wants):
 * x in Unix seconds, CPU/memory/disk in percent, load as the 1-minute average.
 */
import { percent } from "./agent-format";

export interface SampleLike {
  taken_at: string;
  cpu_percent: number;
  load1: number;
  memory_total: number;
  memory_used: number;
  disk_total: number;
  disk_used: number;
}

export interface MetricSeries {
  time: number[];
  cpu: number[];
  memory: number[];
  disk: number[];
  load: number[];
}

export const METRIC_LABELS = { cpu: "CPU %", memory: "Memory %", disk: "Disk %", load: "Load (1 min)" } as const;

export function toSeries(samples: readonly SampleLike[]): MetricSeries {
  const rows = samples
    .map((s) => ({ s, t: Date.parse(s.taken_at) / 1000 }))
    .filter((r) => Number.isFinite(r.t))
    .sort((a, b) => a.t - b.t);
  return {
    time: rows.map((r) => r.t),
    cpu: rows.map((r) => Math.round(r.s.cpu_percent * 10) / 10),
    memory: rows.map((r) => percent(r.s.memory_used, r.s.memory_total)),
    disk: rows.map((r) => percent(r.s.disk_used, r.s.disk_total)),
    load: rows.map((r) => r.s.load1),
  };
}

/** Metric ranges offered on the agent page, as the `since` offset of GET …/metrics. */
export const METRIC_RANGES = { "1h": 3600_000, "6h": 6 * 3600_000, "24h": 24 * 3600_000 } as const;
export type MetricRange = keyof typeof METRIC_RANGES;

export function isMetricRange(v: string | null | undefined): v is MetricRange {
  return v != null && Object.hasOwn(METRIC_RANGES, v);
}
