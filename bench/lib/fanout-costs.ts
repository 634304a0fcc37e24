/**
 * Where an apply's work goes, for `npm run bench -- fanout`: CPU-seconds of each process of the
 * stack (utime + stime from /proc), statements each service sent to Postgres (bench/lib/count-queries.mjs
 * preloaded into it) and messages through nats-server (its monitoring endpoint's /varz).
 */
import { readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

export const COUNT_QUERIES = fileURLToPath(new URL("./count-queries.mjs", import.meta.url));

/** A nats-server config enabling the monitoring endpoint on `port`. */
export function natsMonitorConfig(port: number): string {
  const file = join(tmpdir(), `orch-bench-nats-${process.pid}.conf`);
  writeFileSync(file, `http: 127.0.0.1:${port}\n`);
  return file;
}

/** Messages in and out of nats-server so far. */
export async function natsMessages(monitorPort: number): Promise<{ in: number; out: number }> {
  const v = (await (await fetch(`http://127.0.0.1:${monitorPort}/varz`)).json()) as {
    in_msgs: number;
    out_msgs: number;
  };
  return { in: v.in_msgs, out: v.out_msgs };
}

/** The env that makes a service count its statements into `file`. */
export function countingEnv(file: string, nodeOptions = ""): Record<string, string> {
  return {
    ORCH_BENCH_QUERY_COUNT_FILE: file,
    NODE_OPTIONS: `${nodeOptions} --import=${COUNT_QUERIES}`.trim(),
  };
}

/** The statements a counting service has sent so far (asks it with SIGUSR2, then reads its file). */
export async function statements(pid: number, file: string): Promise<number> {
  writeFileSync(file, "");
  process.kill(pid, "SIGUSR2");
  for (let i = 0; i < 100; i++) {
    await new Promise((r) => setTimeout(r, 20));
    const s = readFileSync(file, "utf8");
    if (s) return Number(s);
  }
  return Number.NaN;
}
