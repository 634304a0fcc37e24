/**
 * One agent of a run: its heading (the agent's name), the operation's status and, when expanded, its
 * per-resource results and diffs. Collapsed sections render only a one-line summary: diffs are what
 * cost time (diff2html builds a table per resource), so a 500-agent plan paints its first sections
 * at once and the rest on demand.
 */
import { memo } from "react";
import { Link } from "wouter";
import type { AssignmentRun, OperationDetail } from "../../api/runs";
import { operationFinished } from "../../lib/run-progress";
import { Badge, toneOf } from "../../ui";
import type { DiffMode } from "../../ui/diff-view";
import { OperationResults } from "../parts/operation-results";

type Target = AssignmentRun["operations"][number];

function summaryOf(op: OperationDetail): string {
  const s = op.summary;
  const parts = [
    s.changed ? `${s.changed} changed` : "",
    s.failed ? `${s.failed} failed` : "",
    s.ok ? `${s.ok} ok` : "",
    s.skipped ? `${s.skipped} skipped` : "",
    s.unsupported ? `${s.unsupported} unsupported` : "",
  ].filter(Boolean);
  return parts.length ? parts.join(", ") : op.error ? op.error : "no resources";
}

export const AgentResults = memo(function AgentResults({
  target,
  operation,
  mode,
  expanded,
  first,
  onToggle,
}: {
  target: Target;
  operation: OperationDetail | undefined;
  mode: DiffMode;
  expanded: boolean;
  /** The top section: its diffs are on screen at once, so they are built with it; the rest lazily. */
  first: boolean;
  onToggle: (nodeId: string) => void;
}) {
  const headingId = `run-agent-${target.node_id}`;
  const bodyId = `${headingId}-body`;
  const finished = operationFinished(target.status);
  return (
    <section className="run-agent" aria-labelledby={headingId} data-testid="run-agent">
      <header className="run-agent-header">
        <h3 id={headingId}>{target.name || target.node_id}</h3>
        <Badge tone={target.status === "succeeded" ? "ok" : toneOf(target.status)}>{target.status}</Badge>
        {operation ? <span className="muted">{summaryOf(operation)}</span> : null}
        <span className="grow" />
        {target.operation_id ? (
          <Link href={`/operations/${encodeURIComponent(target.operation_id)}`} className="btn-link">
            Operation
          </Link>
        ) : null}
        {operation ? (
          <button
            type="button"
            className="btn btn-small"
            aria-expanded={expanded}
            aria-controls={bodyId}
            onClick={() => onToggle(target.node_id)}
          >
            {expanded ? "Hide results" : "Show results"}
            <span className="visually-hidden"> of {target.name || target.node_id}</span>
          </button>
        ) : null}
      </header>
      <div id={bodyId}>
        {operation && expanded ? (
          <OperationResults
            operation={operation}
            mode={mode}
            label={target.name || target.node_id}
            lazyDiffs={!first}
          />
        ) : !finished ? (
          <p className="muted">{waiting(target.status)}</p>
        ) : !operation && target.operation_id ? (
          <p className="muted">Loading results…</p>
        ) : null}
      </div>
    </section>
  );
});

function waiting(status: string): string {
  switch (status) {
    case "queued":
      return "Waiting for its batch.";
    case "not_started":
      return "Not started: the run stopped before this agent's batch.";
    default:
      return "Running…";
  }
}
