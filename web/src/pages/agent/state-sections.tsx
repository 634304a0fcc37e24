/**
 * The agent page's state views: apply or plan modules on this agent (State), its newest operations,
 * and its drift (latest record, "Check now", "Re-apply"). The operation shown under State is in the
 * query string (?op=), so a result is bookmarkable and back/forward step between results. A notice
 * names the approval policies that hold applies to an agent (`agent.apply`); an apply one held shows
 * its change request, with the plan it made below.
 */
import { useState } from "react";
import { Link } from "wouter";
import {
  type RunKind,
  useAgentOperations,
  useCheckDrift,
  useLatestDrift,
  useOperation,
  useReapply,
  useRunOnAgent,
} from "../../api/state";
import { useModules } from "../../api/modules";
import { driftStatus, resultText } from "../../lib/operation-text";
import { useUrlState } from "../../lib/url-state";
import { Badge, Banner, EmptyState, Loading, ProblemMessage, QueryStatus, Section, Time, toneOf } from "../../ui";
import { ApprovalBanner } from "../parts/approval-banner";
import { ItemTable } from "../parts/item-table";
import { DiffModeToggle, DiffView } from "../../ui/diff-view";
import { OperationResults } from "../parts/operation-results";
import { OperationBadge } from "./operation-badge";
import { OperationSummary } from "./operation-summary";

export function StateSection({ nodeId }: { nodeId: string }) {
  const [params, setParams] = useUrlState();
  const opId = params.get("op") ?? undefined;
  const modules = useModules();
  const [picked, setPicked] = useState<string[]>([]);
  const run = useRunOnAgent(nodeId);
  const shown = useOperation(opId);
  const names = (modules.data ?? []).map((m) => m.name);
  const chosen = picked.filter((m) => names.includes(m));

  const toggle = (name: string, on: boolean) =>
    setPicked((p) => (on ? [...p.filter((m) => m !== name), name] : p.filter((m) => m !== name)));
  const start = (kind: RunKind) =>
    run.mutate({ kind, modules: chosen }, { onSuccess: (op) => setParams({ op: op.id }) });

  return (
    <Section title="State">
      <ApprovalBanner action="agent.apply" />
      <QueryStatus query={modules}>
        {names.length === 0 ? (
          <EmptyState title="No modules yet.">
            <Link href="/modules/new">Upload a module</Link> to apply it here.
          </EmptyState>
        ) : (
          <form className="stack" aria-label="Apply or plan modules" onSubmit={(e) => e.preventDefault()}>
            <fieldset className="toolbar">
              <legend>Modules</legend>
              {names.map((name) => (
                <label key={name} className="check mono">
                  <input
                    type="checkbox"
                    checked={chosen.includes(name)}
                    onChange={(e) => toggle(name, e.target.checked)}
                  />
                  {name}
                </label>
              ))}
            </fieldset>
            <div className="toolbar">
              <button
                type="button"
                className="btn"
                disabled={chosen.length === 0 || run.isPending}
                onClick={() => start("plan")}
              >
                Plan
              </button>
              <button
                type="button"
                className="btn btn-primary"
                disabled={chosen.length === 0 || run.isPending}
                onClick={() => start("apply")}
              >
                Apply
              </button>
              {run.isPending ? <Loading label={run.variables?.kind === "apply" ? "Applying…" : "Planning…"} /> : null}
            </div>
          </form>
        )}
      </QueryStatus>
      <ProblemMessage error={run.error} />
      {run.data?.change_request_id && run.data.id === opId ? (
        <Banner kind="info" testId="agent-apply-held">
          An approval policy holds this apply: nothing was applied. It waits for approval as{" "}
          <Link href={`/requests/${encodeURIComponent(run.data.change_request_id)}`}>
            change request {run.data.change_request_id}
          </Link>
          ; the plan below is what its approvers see.
        </Banner>
      ) : null}
      {opId ? (
        <div className="stack">
          <QueryStatus query={shown}>
            {shown.data ? (
              <>
                <OperationSummary operation={shown.data} testId="state-operation-status" />
                {shown.data.results.length > 0 ? <OperationResults operation={shown.data} /> : null}
              </>
            ) : null}
          </QueryStatus>
        </div>
      ) : null}
    </Section>
  );
}

export function OperationsSection({ nodeId }: { nodeId: string }) {
  const ops = useAgentOperations(nodeId);
  const list = ops.data?.operations ?? [];
  return (
    <Section title="Recent operations">
      <QueryStatus query={ops}>
        <ItemTable
          label="Recent operations table"
          className="cards"
          columns={["Operation", "Started", "Kind", "Status", "Modules", "Result", "By"]}
          items={list}
          empty={
            <EmptyState title="No operations yet.">Apply, plan and drift checks of this agent appear here.</EmptyState>
          }
        >
          {(o) => (
            <tr key={o.id}>
              <td className="mono" data-label="Operation">
                <Link href={`/operations/${o.id}`}>{o.id}</Link>
              </td>
              <td data-label="Started">
                <Time value={o.started_at ?? o.created_at} />
              </td>
              <td data-label="Kind">{o.kind}</td>
              <td data-label="Status">
                <OperationBadge operation={o} />
              </td>
              <td className="mono" data-label="Modules">
                {o.modules.join(", ")}
              </td>
              <td data-label="Result">
                <span title={o.error_code ?? undefined}>{resultText(o)}</span>
              </td>
              <td data-label="By">{o.actor.name || o.assignment || "—"}</td>
            </tr>
          )}
        </ItemTable>
      </QueryStatus>
    </Section>
  );
}

export function DriftSection({ nodeId }: { nodeId: string }) {
  const drift = useLatestDrift(nodeId);
  const check = useCheckDrift(nodeId);
  const reapply = useReapply(nodeId);
  const d = drift.data;
  const [params, setParams] = useUrlState();
  const mode = params.get("diff") === "split" ? "split" : "unified";
  const busy = check.isPending || reapply.isPending;
  // What the last action here did, when that is not already visible as the latest record.
  const checked = check.data && !check.data.drift ? check.data.operation : undefined;
  const applied = reapply.data?.apply;

  return (
    <Section
      title="Drift"
      actions={
        <div className="toolbar">
          <button type="button" className="btn" disabled={busy} onClick={() => check.mutate()}>
            Check now
          </button>
          <button
            type="button"
            className="btn btn-primary"
            disabled={busy || !d?.drifted}
            title={d?.drifted ? "Apply the checked modules again" : "Nothing has drifted"}
            onClick={() => d && reapply.mutate(d)}
          >
            Re-apply
          </button>
        </div>
      }
    >
      {check.isPending ? <Loading label="Checking drift…" /> : null}
      {reapply.isPending ? <Loading label="Re-applying and checking again…" /> : null}
      <ProblemMessage error={check.error ?? reapply.error} />
      {checked ? <OperationSummary operation={checked} /> : null}
      {applied && !reapply.isPending ? <OperationSummary operation={applied} /> : null}
      <QueryStatus query={drift}>
        <div className="stack">
          <p>
            <Badge tone={d?.drifted ? "warn" : d ? "ok" : "neutral"}>
              <span data-testid="drift-status">{driftStatus(d)}</span>
            </Badge>{" "}
            {d ? (
              <>
                checked <Time value={d.checked_at} /> ·{" "}
                <Link href={`/operations/${d.operation_id}`}>drift check operation</Link>
              </>
            ) : (
              <span className="muted">
                A drift check plans the modules of this agent's last successful apply and lists what changed.
              </span>
            )}
          </p>
          {d?.resources.some((r) => r.diff) ? (
            <div className="toolbar">
              <DiffModeToggle mode={mode} onChange={(m) => setParams({ diff: m === "split" ? m : undefined })} />
            </div>
          ) : null}
          {d && d.resources.length > 0 ? (
            // The same layout as an operation's diffs (diff-view.css), one figure per drifted resource.
            <section className="operation-results" aria-label="Drifted resources">
              {d.resources.map((r) => (
                <figure key={`${r.module}/${r.id}`} className="resource-diff">
                  <figcaption className="mono">
                    {r.module}/{r.id} <span className="muted">({r.type})</span>{" "}
                    <Badge tone={toneOf(r.status)}>{r.status}</Badge>
                    {r.message ? <span className="muted"> {r.message}</span> : null}
                  </figcaption>
                  {r.diff ? <DiffView diff={r.diff} mode={mode} label={`${r.module}/${r.id}`} /> : null}
                </figure>
              ))}
            </section>
          ) : null}
        </div>
      </QueryStatus>
    </Section>
  );
}
