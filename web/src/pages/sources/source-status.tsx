import { Badge, type BadgeTone } from "../../ui";

const TONE: Record<string, BadgeTone> = { ok: "ok", error: "danger", pending: "info" };

/** pending (never synced), ok, or error (the last attempt failed; the previous commit stays in force). */
export function SourceStatus({ status }: { status: string }) {
  return (
    <span data-testid="source-status">
      <Badge tone={TONE[status] ?? "neutral"}>{status}</Badge>
    </span>
  );
}

/** A commit as its first 7 characters, the full SHA as tooltip; a dash before the first sync. */
export function CommitRef({ commit }: { commit: string | null | undefined }) {
  if (!commit) return <span className="muted">—</span>;
  return (
    <code className="mono" title={commit} data-testid="source-commit">
      {commit.slice(0, 7)}
    </code>
  );
}
