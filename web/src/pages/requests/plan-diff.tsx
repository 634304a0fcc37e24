/**
 * What a held `assignment.apply` would change: its plan run (`content.plan_run_id`), one section per
 * agent with that agent's per-resource results and diffs (the run and operation pages' component).
 * The plan is read again until every agent reported.
 */
import { useEffect } from "react";
import { Link } from "wouter";
import { usePlanRun } from "../../api/approvals";
import { useOperation } from "../../api/state";
import { operationFinished } from "../../lib/run-progress";
import { Badge, EmptyState, Loading, ProblemMessage, QueryStatus } from "../../ui";
import { loadDiffRenderer } from "../../ui/diff-view";
import { OperationResults } from "../parts/operation-results";
import { RUN_TONE } from "../runs/run-counts";

type Target = { node_id: string; name: string; operation_id: string | null; status: string };

export function PlanDiff({ assignment, runId }: { assignment: string; runId: string }) {
  const run = usePlanRun(assignment, runId);
  useEffect(() => {
    void loadDiffRenderer();
  }, []);
  const targets = [...(run.data?.operations ?? [])].sort((a, b) => a.name.localeCompare(b.name));
  return (
    <QueryStatus query={run}>
      {run.data ? (
        <>
          <p>
            Plan run{" "}
            <Link href={`/assignments/${encodeURIComponent(assignment)}/runs/${encodeURIComponent(runId)}`}>
              {runId}
            </Link>{" "}
            <Badge tone={RUN_TONE[run.data.status] ?? "neutral"}>{run.data.status}</Badge>
          </p>
          {targets.length ? (
            <div className="request-targets">
              {targets.map((t) => (
                <TargetDiff key={t.node_id} target={t} />
              ))}
            </div>
          ) : (
            <EmptyState title="The plan has no targets." />
          )}
        </>
      ) : null}
    </QueryStatus>
  );
}

function TargetDiff({ target }: { target: Target }) {
  const op = useOperation(target.operation_id ?? undefined);
  return (
    <section className="request-target card" aria-label={target.name} data-testid="request-target">
      <h3>
        <Link href={`/agents/${encodeURIComponent(target.node_id)}`}>{target.name}</Link>
      </h3>
      {!target.operation_id || !operationFinished(target.status) ? (
        <p className="muted">{target.status}: waiting for the agent's plan…</p>
      ) : op.data ? (
        <OperationResults operation={op.data} label={target.name} />
      ) : op.error ? (
        <ProblemMessage error={op.error} />
      ) : (
        <Loading />
      )}
    </section>
  );
}

/** What a held `agent.apply` would change: its plan operation (`content.plan_operation_id`). */
export function AgentPlanDiff({ nodeId, name, operationId }: { nodeId: string; name: string; operationId: string }) {
  const op = useOperation(operationId);
  useEffect(() => {
    void loadDiffRenderer();
  }, []);
  return (
    <section className="request-target card" aria-label={name} data-testid="request-target">
      <h3>
        <Link href={`/agents/${encodeURIComponent(nodeId)}`}>{name}</Link>{" "}
        <Link href={`/operations/${encodeURIComponent(operationId)}`}>plan {operationId}</Link>
      </h3>
      {op.data && !operationFinished(op.data.status) ? (
        <p className="muted">{op.data.status}: waiting for the agent's plan…</p>
      ) : op.data ? (
        <OperationResults operation={op.data} label={name} />
      ) : op.error ? (
        <ProblemMessage error={op.error} />
      ) : (
        <Loading />
      )}
    </section>
  );
}
