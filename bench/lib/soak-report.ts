/** The soak's per-minute table and its RSS growth verdict (minute 2 → the final sample). */
import type { ProcSample, Sample } from "./soak-sample.js";

/** Growth above this fraction between minute 2 and the end fails the soak. */
export const MAX_GROWTH = 0.1;
/** Runs shorter than this give minute 2 → end too little time to tell a leak from warm-up. */
export const MIN_JUDGED_SECONDS = 4 * 60;
/** The sample the growth is measured from: the process has warmed up (JIT, pools, caches) by then. */
export const BASELINE_MINUTE = 2;

export interface Growth {
  label: string;
  pid: number;
  fromMiB: number;
  toMiB: number;
  /** (to - from) / from. */
  growth: number;
  verdict: "ok" | "grew" | "gone" | "restarted" | "not judged";
}

export interface Verdict {
  judged: boolean;
  /** Why the run failed, empty when it passed (or was too short to judge and nothing died). */
  failures: string[];
  rows: Growth[];
}

const num = (v: number | undefined, digits = 1) => (v === undefined || Number.isNaN(v) ? "-" : v.toFixed(digits));

export function formatSample(s: Sample, baseline: Sample | undefined): string {
  const title = `${s.final ? "final" : `minute ${s.minute}`} (t=${s.atS.toFixed(0)} s, load average ${s.load.map((l) => l.toFixed(2)).join(" ")})`;
  const head = ["process", "pid", "RSS MiB", "vs min 2", "heap MiB", "ELD mean ms", "ELD p99 ms", "ELD max ms"];
  const rows = s.procs.map((p) => {
    const base = baseline?.procs.find((b) => b.label === p.label && b.pid === p.pid);
    const delta = base ? `${(((p.rssMiB - base.rssMiB) / base.rssMiB) * 100).toFixed(1)}%` : "-";
    return [
      p.label,
      String(p.pid),
      num(p.rssMiB),
      delta,
      num(p.heapUsedMiB),
      num(p.lagMeanMs, 2),
      num(p.lagP99Ms, 2),
      num(p.lagMaxMs, 2),
    ];
  });
  return `${title}\n${table([head, ...rows])}`;
}

/** Minute 2 → final, per process; "bench" (the load generator itself) is shown but not judged. */
export function verdict(samples: Sample[], durationS: number): Verdict {
  const baseline = samples.find((s) => !s.final && s.minute === BASELINE_MINUTE);
  const end = samples.at(-1);
  const judged = durationS >= MIN_JUDGED_SECONDS && baseline !== undefined && end !== undefined && end !== baseline;
  const from = baseline ?? samples[0];
  const rows: Growth[] = [];
  const failures: string[] = [];
  if (!from || !end) return { judged: false, failures: ["no samples"], rows };
  for (const p of from.procs) {
    const last: ProcSample | undefined = end.procs.find((e) => e.label === p.label);
    const row: Growth = {
      label: p.label,
      pid: p.pid,
      fromMiB: p.rssMiB,
      toMiB: last?.rssMiB ?? Number.NaN,
      growth: Number.NaN,
      verdict: "ok",
    };
    if (!last) row.verdict = "gone";
    else if (last.pid !== p.pid) row.verdict = "restarted";
    else {
      row.growth = (last.rssMiB - p.rssMiB) / p.rssMiB;
      if (p.kind === "bench" || !judged) row.verdict = "not judged";
      else if (row.growth > MAX_GROWTH) row.verdict = "grew";
    }
    // A process that died or was replaced during the soak fails it whatever the duration.
    if (row.verdict === "gone" || row.verdict === "restarted")
      failures.push(`${p.label} (pid ${p.pid}) ${row.verdict}`);
    if (row.verdict === "grew") failures.push(`${p.label} RSS grew ${(row.growth * 100).toFixed(1)}%`);
    rows.push(row);
  }
  return { judged, failures, rows };
}

export function formatVerdict(v: Verdict, durationS: number): string {
  const head = ["process", "pid", `RSS ${v.judged ? "min 2" : "first"}`, "RSS end", "growth", "verdict"];
  const rows = v.rows.map((r) => [
    r.label,
    String(r.pid),
    num(r.fromMiB),
    num(r.toMiB),
    Number.isNaN(r.growth) ? "-" : `${(r.growth * 100).toFixed(1)}%`,
    r.verdict,
  ]);
  const summary = !v.judged
    ? `RSS growth: too short to judge (${durationS} s; judged from ${MIN_JUDGED_SECONDS / 60} minutes)`
    : v.failures.length
      ? `RSS growth minute ${BASELINE_MINUTE} → end: FAILED (limit ${MAX_GROWTH * 100}%)`
      : `RSS growth minute ${BASELINE_MINUTE} → end: every process within ${MAX_GROWTH * 100}%`;
  const failed = v.failures.length ? `\nfailures: ${v.failures.join("; ")}` : "";
  return `${table([head, ...rows])}\n${summary}${failed}`;
}

function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join("  "))
    .join("\n");
}
