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

interface Named {
  name: string | null;
  node_id: string;
}

/**
 * Fleet order: by name, then node id (unique), so every poll yields the same order. An agent without a
 * name (pending) sorts by its node id after the named ones.
 */
export function compareAgents(a: Named, b: Named): number {
  if (a.name !== null && b.name === null) return -1;
  if (a.name === null && b.name !== null) return 1;
  const byName = (a.name ?? "").localeCompare(b.name ?? "", "en", { numeric: true });
  return byName !== 0 ? byName : a.node_id < b.node_id ? -1 : a.node_id > b.node_id ? 1 : 0;
}

export function sortAgents<T extends Named>(agents: readonly T[]): T[] {
  return [...agents].sort(compareAgents);
}

export type DriftTone = "ok" | "warn" | "neutral";

/**
 * An agent's drift in one word for tables and headers: its latest drift record, null when no check
 * has run (the API's 404), undefined while unknown (loading, or the request failed).
 */
export function driftSummary(d: { drifted: boolean; resources: readonly unknown[] } | null | undefined): {
  text: string;
  tone: DriftTone;
} {
  if (!d) return { text: "unknown", tone: "neutral" };
  return d.drifted ? { text: `drifted (${d.resources.length})`, tone: "warn" } : { text: "in sync", tone: "ok" };
}

const PENDING_REASONS: Record<string, string> = {
  join_token_invalid: "join token not recognised",
  join_token_expired: "join token expired",
  join_token_exhausted: "join token used up",
  join_token_revoked: "join token revoked",
};

/** Why a pending agent waits, for people: its join token's problem, or a plain wait for approval. */
export function pendingReasonText(reason: string | null | undefined): string {
  if (!reason) return "waiting for approval";
  return PENDING_REASONS[reason] ?? reason.replaceAll("_", " ");
}
