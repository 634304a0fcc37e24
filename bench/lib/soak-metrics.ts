/**
 * Event-loop delay and heap of a Node service, read from its health port's /metrics: the kit
 * registers prom-client's default collectors (packages/kit/src/health.ts), whose
 * nodejs_eventloop_lag_* gauges come from a monitorEventLoopDelay histogram that prom-client resets
 * on every scrape, so one scrape a minute gives that minute's delay.
 */
import { readdirSync, readFileSync, readlinkSync } from "node:fs";

export interface NodeMetrics {
  lagMeanMs: number;
  lagP99Ms: number;
  lagMaxMs: number;
  heapUsedMiB: number;
}

/** The value of an unlabelled-by-us gauge in a Prometheus text exposition (first series). */
export function gauge(text: string, name: string): number | undefined {
  const m = new RegExp(`^${name}(?:\\{[^}]*\\})? ([^\\s]+)`, "m").exec(text);
  return m ? Number(m[1]) : undefined;
}

/**
 * prom-client's monitorEventLoopDelay resolution (the kit keeps its default). Each sample of that
 * histogram is the whole timer interval, so an idle loop reads 10 ms: the delay is what is above it.
 */
export const MONITOR_RESOLUTION_MS = 10;

const delayMs = (seconds: number) => Math.max(0, seconds * 1e3 - MONITOR_RESOLUTION_MS);

export function parseNodeMetrics(text: string): NodeMetrics | undefined {
  const mean = gauge(text, "nodejs_eventloop_lag_mean_seconds");
  const p99 = gauge(text, "nodejs_eventloop_lag_p99_seconds");
  const max = gauge(text, "nodejs_eventloop_lag_max_seconds");
  const heap = gauge(text, "nodejs_heap_size_used_bytes");
  if (mean === undefined || p99 === undefined || max === undefined || heap === undefined) return undefined;
  return { lagMeanMs: delayMs(mean), lagP99Ms: delayMs(p99), lagMaxMs: delayMs(max), heapUsedMiB: heap / 2 ** 20 };
}

export async function scrape(port: number): Promise<NodeMetrics | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5_000) });
    return res.ok ? parseNodeMetrics(await res.text()) : undefined;
  } catch {
    return undefined; // a service that does not answer shows as "-" in that minute's row
  }
}

/**
 * The TCP ports a process listens on (IPv4 and IPv6): its socket inodes (/proc/<pid>/fd) matched
 * against the LISTEN rows of its network namespace's tables.
 */
export function listeningPorts(pid: number): number[] {
  try {
    const inodes = new Set<string>();
    for (const fd of readdirSync(`/proc/${pid}/fd`)) {
      const m = /^socket:\[(\d+)\]$/.exec(safeReadlink(`/proc/${pid}/fd/${fd}`));
      if (m) inodes.add(m[1]!);
    }
    const ports: number[] = [];
    for (const table of ["tcp", "tcp6"]) {
      for (const line of readFileSync(`/proc/${pid}/net/${table}`, "utf8").split("\n").slice(1)) {
        const f = line.trim().split(/\s+/);
        // f[1] local address "ADDR:PORT" in hex, f[3] state (0A = LISTEN), f[9] inode
        if (f[3] === "0A" && inodes.has(f[9]!)) ports.push(Number.parseInt(f[1]!.split(":")[1]!, 16));
      }
    }
    return ports;
  } catch {
    return [];
  }
}

function safeReadlink(path: string): string {
  try {
    return readlinkSync(path);
  } catch {
    return "";
  }
}

/**
 * pid → health port of each Node service: the one of its listening ports whose /metrics answers
 * with the default collectors. Found from the sockets rather than the services' logs, which the
 * fault stack keeps at warn level (the port is logged at info).
 */
export async function healthPorts(pids: number[]): Promise<Map<number, number>> {
  const out = new Map<number, number>();
  await Promise.all(
    pids.map(async (pid) => {
      for (const port of listeningPorts(pid)) {
        if (await scrape(port)) {
          out.set(pid, port);
          return;
        }
      }
    }),
  );
  return out;
}
