/** The live counts and status of a run: each number in its own element so tests and readers find it. */
import type { AssignmentRun, RunLive } from "../../api/runs";
import { notStartedCount, runCounts } from "../../lib/run-progress";
import { Badge } from "../../ui";

export const RUN_TONE: Record<string, "ok" | "warn" | "danger" | "info" | "neutral"> = {
  running: "info",
  completed: "ok",
  stopped: "warn",
  interrupted: "danger",
};

export function RunStatus({ run, live, detail }: { run: AssignmentRun; live: RunLive; detail: string | undefined }) {
  return (
    <p className="run-status-line">
      <Badge tone={RUN_TONE[run.status] ?? "neutral"}>
        <span data-testid="run-status">{run.status}</span>
      </Badge>{" "}
      <span className="live-indicator" title={detail}>
        <span
          className={`live-dot${live === "live" ? " is-live" : live === "reconnecting" ? " is-retrying" : ""}`}
          aria-hidden="true"
        />
        <span data-testid="run-live" role="status">
          {live}
        </span>
        {detail && live === "reconnecting" ? <span className="muted"> ({detail})</span> : null}
      </span>
    </p>
  );
}

export function RunCounts({ run }: { run: AssignmentRun }) {
  const c = runCounts(run);
  const items: [string, string, number][] = [
    ["Done", "run-done", c.done],
    ["Failed", "run-failed", c.failed],
    ["Unreachable", "run-unreachable", c.unreachable],
    ["Running", "run-running", c.running],
    ["Not started", "run-not-started", notStartedCount(c)],
  ];
  return (
    <dl className="counts run-counts" aria-label={`Progress of ${c.total} agents`}>
      {items.map(([label, testId, n]) => (
        <div className="count" key={testId}>
          <dt>{label}</dt>
          <dd data-testid={testId}>{n}</dd>
        </div>
      ))}
    </dl>
  );
}
