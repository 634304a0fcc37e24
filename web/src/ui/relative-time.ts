/** "3 min ago" / "in 2 h" for a timestamp, relative to `now`; pure so it is unit-tested. */
const UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ["year", 365 * 24 * 3600_000],
  ["month", 30 * 24 * 3600_000],
  ["week", 7 * 24 * 3600_000],
  ["day", 24 * 3600_000],
  ["hour", 3600_000],
  ["minute", 60_000],
  ["second", 1000],
];

const format = new Intl.RelativeTimeFormat("en", { numeric: "auto", style: "short" });

export function relativeTime(ms: number, now: number): string {
  const diff = ms - now;
  const abs = Math.abs(diff);
  if (abs < 10_000) return "just now";
  for (const [unit, size] of UNITS) {
    if (abs >= size) return format.format(Math.trunc(diff / size), unit);
  }
  return "just now";
}

/** Milliseconds since the epoch for the API's timestamps (ISO strings or epoch ms), or undefined. */
export function toMs(value: string | number | Date | null | undefined): number | undefined {
  if (value === null || value === undefined || value === "") return undefined;
  const ms = value instanceof Date ? value.getTime() : typeof value === "number" ? value : Date.parse(value);
  return Number.isFinite(ms) ? ms : undefined;
}
