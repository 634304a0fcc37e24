/** One sample of every watched process: RSS from /proc, event-loop delay and heap from /metrics. */
import { loadavg } from "node:os";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { MONITOR_RESOLUTION_MS, scrape, type NodeMetrics } from "./soak-metrics.js";
import { rssMiB, watchedProcs, type ProcKind } from "./soak-procs.js";

export interface ProcSample extends Partial<NodeMetrics> {
  label: string;
  /** "bench" is this process: it generates the load and keeps every request's record, so it is shown, not judged. */
  kind: ProcKind | "bench";
  pid: number;
  rssMiB: number;
}

export interface Sample {
  /** Seconds since the load started. */
  atS: number;
  minute: number;
  final: boolean;
  load: [number, number, number];
  procs: ProcSample[];
}

/** The bench's own event-loop delay, measured as prom-client does it in the services. */
const ownDelay = monitorEventLoopDelay({ resolution: MONITOR_RESOLUTION_MS });
const ownMs = (ns: number) => Math.max(0, ns / 1e6 - MONITOR_RESOLUTION_MS);
ownDelay.enable();

export async function takeSample(opts: {
  atS: number;
  final: boolean;
  /** pid → health port of the Node services. */
  healthPorts: Map<number, number>;
}): Promise<Sample> {
  const procs: ProcSample[] = [];
  const own = rssMiB(process.pid) ?? Number.NaN;
  procs.push({
    label: "bench",
    kind: "bench",
    pid: process.pid,
    rssMiB: own,
    lagMeanMs: ownMs(ownDelay.mean),
    lagP99Ms: ownMs(ownDelay.percentile(99)),
    lagMaxMs: ownMs(ownDelay.max),
    heapUsedMiB: process.memoryUsage().heapUsed / 2 ** 20,
  });
  ownDelay.reset();
  const watched = watchedProcs();
  const metrics = await Promise.all(
    watched.map((p) => {
      const port = opts.healthPorts.get(p.pid);
      return port === undefined ? undefined : scrape(port);
    }),
  );
  watched.forEach((p, i) => {
    const rss = rssMiB(p.pid);
    if (rss !== undefined) procs.push({ label: p.label, kind: p.kind, pid: p.pid, rssMiB: rss, ...(metrics[i] ?? {}) });
  });
  const [l1, l5, l15] = loadavg();
  return { atS: opts.atS, minute: Math.floor(opts.atS / 60), final: opts.final, load: [l1!, l5!, l15!], procs };
}
