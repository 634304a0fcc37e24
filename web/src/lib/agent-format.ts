/** How agents read in the console: pure, so the table and the detail page agree. */

/** A human OS name from the attributes the agent reports (agent/src/attributes.ts), or "". */
export function osLabel(attributes: Readonly<Record<string, string>> | undefined): string {
  if (!attributes) return "";
  if (attributes.os_release) return attributes.os_release;
  const distro = [attributes.distro, attributes.distro_version].filter(Boolean).join(" ");
  return distro || attributes.os || "";
}

/** Tags as sorted `k=v` strings (stable order for chips and for comparing renders). */
export function tagList(tags: Readonly<Record<string, string>> | undefined): string[] {
  if (!tags) return [];
  return Object.keys(tags)
    .sort()
    .map((k) => (tags[k] === "" ? k : `${k}=${tags[k]}`));
}

const UNITS = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** 1536 → "1.5 KiB". */
export function formatBytes(n: number): string {
  if (!Number.isFinite(n) || n < 0) return "–";
  let v = n;
  let u = 0;
  while (v >= 1024 && u < UNITS.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v : v.toFixed(v < 10 ? 1 : 0)} ${UNITS[u]}`;
}

/** used/total as a percentage with one decimal, or 0 when the total is unknown. */
export function percent(used: number, total: number): number {
  return total > 0 ? Math.round((used / total) * 1000) / 10 : 0;
}
