/** How the console words an operation and a drift record (pure: unit-tested without a browser). */

export interface OperationText {
  status: string;
  error: string | null;
  summary: { ok: number; changed: number; failed: number; skipped: number; unsupported: number };
}

/** pending/running: the operation has not ended yet (and is worth fetching again). */
export function isOpen(status: string): boolean {
  return status === "pending" || status === "running";
}

/** The API's status word for people: `timed_out` → "timed out". */
export function statusLabel(status: string): string {
  return status.replaceAll("_", " ");
}

/** The operation's error when it failed as a whole, else its counts (zero skipped/unsupported left out). */
export function resultText(o: Pick<OperationText, "error" | "summary">): string {
  if (o.error) return o.error;
  const s = o.summary;
  const parts = [`${s.ok} ok`, `${s.changed} changed`, `${s.failed} failed`];
  if (s.skipped) parts.push(`${s.skipped} skipped`);
  if (s.unsupported) parts.push(`${s.unsupported} unsupported`);
  return parts.join(", ");
}

/** The drift-status words: null = the API's 404 (no check yet); undefined = still loading. */
export function driftStatus(d: { drifted: boolean } | null | undefined): "in sync" | "drifted" | "never checked" | "" {
  if (d === null) return "never checked";
  if (d === undefined) return "";
  return d.drifted ? "drifted" : "in sync";
}

/**
 * The status badge of an operation: a drift check that ended well but found drift says "drift found"
 * (a warning, not a green "succeeded"). `drifted`: what this operation's drift record says, undefined
 * when not known (no record, or not fetched).
 */
export function operationBadge(
  o: { kind: string; status: string },
  drifted: boolean | undefined,
): { text: string; warn: boolean } {
  if (o.kind === "drift" && o.status === "succeeded" && drifted === true) return { text: "drift found", warn: true };
  return { text: statusLabel(o.status), warn: false };
}
