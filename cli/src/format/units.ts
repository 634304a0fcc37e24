/** Sizes and durations for humans (pure; unit-tested). */

/** 1536 → "1.5 KiB". */
export function bytes(n: number): string {
  const units = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
  let v = n;
  let i = 0;
  while (Math.abs(v) >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${Math.round(v)} B` : `${v.toFixed(1)} ${units[i]}`;
}

/** 93784 → "1d2h3m". */
export function duration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds));
  const d = Math.floor(s / 86_400);
  const h = Math.floor((s % 86_400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d) return `${d}d${h}h${m}m`;
  if (h) return `${h}h${m}m`;
  return m ? `${m}m${s % 60}s` : `${s % 60}s`;
}

// One pluralisation rule for the CLI and the services' event summaries.
export { agree, count } from "@orch/contracts";
