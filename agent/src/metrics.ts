import { readFileSync, statfsSync } from "node:fs";
import os from "node:os";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { MetricsSampleSchema } from "@orch/contracts";

export type Sample = MessageInitShape<typeof MetricsSampleSchema>;

interface CpuTimes {
  idle: number;
  total: number;
}

function cpuTimes(): CpuTimes {
  let idle = 0;
  let total = 0;
  for (const c of os.cpus()) {
    const t = c.times;
    idle += t.idle;
    total += t.user + t.nice + t.sys + t.idle + t.irq;
  }
  return { idle, total };
}

/** Bytes received/sent over every interface except loopback, from /proc/net/dev. */
export function parseNetDev(text: string): { rx: number; tx: number } {
  let rx = 0;
  let tx = 0;
  for (const line of text.split("\n").slice(2)) {
    const [name, rest] = line.split(":");
    if (!rest || name!.trim() === "lo") continue;
    const f = rest.trim().split(/\s+/).map(Number);
    rx += f[0] ?? 0;
    tx += f[8] ?? 0;
  }
  return { rx, tx };
}

function memoryUsed(total: number): number {
  try {
    const m = /^MemAvailable:\s+(\d+) kB/m.exec(readFileSync("/proc/meminfo", "utf8"));
    if (m) return total - Number(m[1]) * 1024;
  } catch {
    /* not Linux */
  }
  return total - os.freemem();
}

function disk(): { total: number; used: number } {
  try {
    const s = statfsSync("/");
    return { total: s.blocks * s.bsize, used: (s.blocks - s.bfree) * s.bsize };
  } catch {
    return { total: 0, used: 0 };
  }
}

function net(): { rx: number; tx: number } {
  try {
    return parseNetDev(readFileSync("/proc/net/dev", "utf8"));
  } catch {
    return { rx: 0, tx: 0 };
  }
}

/** CPU utilisation is a delta, so the sampler remembers the previous reading. */
export function createSampler(now: () => number = Date.now) {
  let prev = cpuTimes();
  return (): Sample => {
    const cur = cpuTimes();
    const dTotal = cur.total - prev.total;
    const cpuPercent = dTotal > 0 ? Math.min(100, Math.max(0, (100 * (dTotal - (cur.idle - prev.idle))) / dTotal)) : 0;
    prev = cur;
    const [load1, load5, load15] = os.loadavg() as [number, number, number];
    const memoryTotal = os.totalmem();
    const d = disk();
    const n = net();
    return {
      takenAt: now(),
      cpuPercent: Math.round(cpuPercent * 100) / 100,
      load1,
      load5,
      load15,
      memoryTotal,
      memoryUsed: memoryUsed(memoryTotal),
      diskTotal: d.total,
      diskUsed: d.used,
      netRxBytes: n.rx,
      netTxBytes: n.tx,
      uptimeSeconds: os.uptime(),
    };
  };
}
