/**
 * A plan or apply run of an assignment (/assignments/:name/runs/:runId?view=split): live status and
 * counts over SSE (no polling), then one section per agent with its per-resource results and diffs,
 * fetched as each agent's operation finishes. A reconnect after a gateway restart replaces what is
 * shown with the run's true state.
 *
 * Big plans: the first EXPANDED agents show their results, the rest a one-line summary with "Show
 * results"; and a diff's table is built only when it nears the viewport (DiffView `lazy`), except
 * the top agent's. Building diff tables is the cost (diff2html, ~1 ms and ~100 elements each); a
 * collapsed section is a heading and a line, so 500 agents × 20 resources paint in well under a
 * second, and every agent's heading stays in the document (find in page, headings navigation) —
 * virtualising would drop both.
 */
import { useCallback, useEffect, useMemo, useState } from "react";
import { Link, useParams } from "wouter";
import { type AssignmentRun, type OperationDetail, useRun, useRunResults, useRunStream } from "../api/runs";
import { useUrlState } from "../lib/url-state";
import { EmptyState, Page, ProblemMessage, QueryStatus, Section, Time } from "../ui";
import { type DiffMode, DiffModeToggle, loadDiffRenderer, useDiffRenderer } from "../ui/diff-view";
import "./pages.css";
import { AgentResults } from "./runs/agent-results";
import { usePlanViewMarks } from "./runs/plan-view-marks";
import { RunCounts, RunStatus } from "./runs/run-counts";
import "./runs/runs.css";

/** Agents whose results show expanded without asking. */
const EXPANDED = 10;

export default function RunPage() {
  const { name = "", runId = "" } = useParams<{ name: string; runId: string }>();
  const [params, setParams] = useUrlState();
  const mode: DiffMode = params.get("view") === "split" ? "split" : "unified";
  const first = useRun(name, runId);
  const { run, live, detail } = useRunStream(name, runId, first.data);
  const results = useRunResults(name, runId, run);
  const render = useDiffRenderer();
  const [toggled, setToggled] = useState<ReadonlySet<string>>(new Set());

  useEffect(() => {
    void loadDiffRenderer();
  }, []);

  const targets = useMemo(
    () => [...(run?.operations ?? [])].sort((a, b) => a.batch - b.batch || a.name.localeCompare(b.name)),
    [run],
  );

  usePlanViewMarks(results.complete && run?.kind === "plan", render !== undefined);

  const onToggle = useCallback((nodeId: string) => {
    setToggled((prev) => {
      const next = new Set(prev);
      if (next.has(nodeId)) next.delete(nodeId);
      else next.add(nodeId);
      return next;
    });
  }, []);

  const kind = run?.kind ?? "";
  const title = run ? `${kind === "plan" ? "Plan" : "Apply"} ${name}` : `Run of ${name}`;
  const withResults = targets.filter((t) => t.operation_id && results.operations.has(t.operation_id)).length;

  return (
    <Page title={title} actions={<Link href={`/assignments/${encodeURIComponent(name)}`}>Back to {name}</Link>}>
      <QueryStatus query={run ? { data: run, error: undefined } : first}>
        {run ? (
          <>
            <RunStatus run={run} live={live} detail={detail} />
            <RunCounts run={run} />
            <RunProps run={run} operations={results.operations} />
            <ProblemMessage error={results.error} />
            <Section
              title="Agents"
              actions={
                <>
                  <DiffModeToggle mode={mode} onChange={(m) => setParams({ view: m === "split" ? "split" : null })} />
                  {targets.length > EXPANDED ? (
                    <button
                      type="button"
                      className="btn btn-small"
                      onClick={() =>
                        setToggled((prev) =>
                          prev.size > 0 ? new Set() : new Set(targets.slice(EXPANDED).map((t) => t.node_id)),
                        )
                      }
                    >
                      {toggled.size > 0 ? "Collapse to first 10" : "Expand all"}
                    </button>
                  ) : null}
                </>
              }
            >
              {targets.length === 0 ? (
                <EmptyState title="The selector matched no approved agents." />
              ) : (
                <>
                  <p className="muted run-results-count">
                    Results of {withResults} of {targets.length} agents
                    {targets.length > EXPANDED ? `; the first ${EXPANDED} are shown expanded` : ""}.
                  </p>
                  {targets.map((t, i) => (
                    <AgentResults
                      key={t.node_id}
                      target={t}
                      operation={t.operation_id ? results.operations.get(t.operation_id) : undefined}
                      mode={mode}
                      expanded={i < EXPANDED !== toggled.has(t.node_id)}
                      first={i === 0}
                      onToggle={onToggle}
                    />
                  ))}
                </>
              )}
            </Section>
          </>
        ) : null}
      </QueryStatus>
    </Page>
  );
}

function RunProps({ run, operations }: { run: AssignmentRun; operations: ReadonlyMap<string, OperationDetail> }) {
  return (
    <dl className="props card run-props">
      <dt>Run</dt>
      <dd className="mono">{run.run_id}</dd>
      <dt>Selector</dt>
      <dd className="mono">{run.selector}</dd>
      <dt>Modules</dt>
      <dd>{run.modules.join(", ")}</dd>
      <dt>Batches</dt>
      <dd>
        {run.batches <= 1 ? "all at once" : `${run.batches} batches of ${run.batch_size}`}
        {run.max_failures !== null ? `; stops after more than ${run.max_failures} failures` : ""}
      </dd>
      <dt>Started</dt>
      <dd>
        <Time value={run.created_at} /> by {/* The run names its operator by id; its operations carry the name. */}
        {firstOperation(operations)?.actor.name ?? <span className="mono">{run.started_by}</span>}
      </dd>
      <dt>Finished</dt>
      <dd>{run.finished_at ? <Time value={run.finished_at} /> : "—"}</dd>
    </dl>
  );
}

function firstOperation(ops: ReadonlyMap<string, OperationDetail>): OperationDetail | undefined {
  for (const op of ops.values()) return op;
  return undefined;
}
