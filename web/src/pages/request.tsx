/**
 * One change request (/requests/:id): what it would do (summary, target, the frozen content), why
 * (the requester's reason), where it stands (status, approvals n/required, decisions with their
 * comments), and for an `assignment.apply` (or an `agent.apply`) the per-agent diff of its plan, above the decision so
 * it is read first. While it is pending: Approve / Deny with a comment, and Cancel for the requester (or an admin). The API decides who may:
 * a refusal (own_change_request, not_an_approver, plan_changed, …) is shown as a sentence with its code.
 */
import { ERROR_CATALOGUE, isErrorReason } from "@orch/contracts/error-catalogue";
import { useState } from "react";
import { Link, useParams } from "wouter";
import { type ChangeRequest, type Decision, useChangeRequest, useDecide } from "../api/approvals";
import { ApiError } from "../api/client";
import { useSession } from "../api/session";
import { Banner, Field, Page, ProblemMessage, QueryStatus, Section, Time } from "../ui";
import "./pages.css";
import { CommandRunContentView } from "./requests/command-run";
import { CatalogWriteContentView } from "./requests/catalog-write";
import { AgentPlanDiff, PlanDiff } from "./requests/plan-diff";
import { approvalsOf, RequestStatus } from "./requests/request-status";
import "./requests/requests.css";
import { TerminalPassLink } from "./requests/terminal-pass";

/**
 * A refused decision said as the error catalogue means it (the API's detail names ids and is for
 * logs and scripts), with its code, as the sign-in page does for SSO codes (lib/sso.ts).
 */
function DecisionProblem({ error }: { error: unknown }) {
  const code = error instanceof ApiError ? error.problem.code : undefined;
  const message = code && isErrorReason(code) ? ERROR_CATALOGUE[code].meaning : undefined;
  if (!message) return <ProblemMessage error={error} />;
  return (
    <div className="problem" role="alert" data-testid="decision-problem">
      <span className="problem-detail">{message}</span>
      <code className="problem-code">{code}</code>
    </div>
  );
}

export default function RequestPage() {
  const { id = "" } = useParams<{ id: string }>();
  const q = useChangeRequest(id);
  const r = q.data;
  return (
    <Page title={r ? `Change request: ${r.summary || r.action}` : "Change request"}>
      <p>
        <Link href="/requests?to_approve=true">← Change requests</Link>
      </p>
      <QueryStatus query={q}>{r ? <RequestBody request={r} /> : null}</QueryStatus>
    </Page>
  );
}

function RequestBody({ request: r }: { request: ChangeRequest }) {
  const content = r.content as Record<string, unknown>;
  const planRunId = typeof content.plan_run_id === "string" ? content.plan_run_id : undefined;
  const planOperationId = typeof content.plan_operation_id === "string" ? content.plan_operation_id : undefined;
  const assignment = typeof content.assignment === "string" ? content.assignment : r.target_name;
  return (
    <>
      <dl className="props card">
        <dt>Status</dt>
        <dd>
          <RequestStatus request={r} testId="request-status" />
        </dd>
        <dt>Action</dt>
        <dd className="mono">{r.action}</dd>
        <dt>Target</dt>
        <dd>
          <RequestTarget request={r} />
        </dd>
        <dt>Requester</dt>
        <dd>{r.requester.name}</dd>
        <dt>Reason</dt>
        <dd>{r.reason || <span className="muted">none given</span>}</dd>
        <dt>Approvals</dt>
        <dd data-testid="request-approvals">
          {approvalsOf(r)} <span className="muted">(policy {r.policy})</span>
        </dd>
        <dt>Created</dt>
        <dd>
          <Time value={r.created_at} />
        </dd>
        {r.status === "pending" || r.status === "expired" ? (
          <>
            <dt>{r.status === "pending" ? "Expires" : "Expired"}</dt>
            <dd>
              <Time value={r.expires_at} />
            </dd>
          </>
        ) : null}
        {r.executed_at ? (
          <>
            <dt>Executed</dt>
            <dd>
              <Time value={r.executed_at} />
            </dd>
          </>
        ) : null}
        {r.result ? (
          <>
            <dt>Result</dt>
            <dd>
              <RequestResult request={r} assignment={assignment} />
            </dd>
          </>
        ) : null}
        {r.error ? (
          <>
            <dt>Error</dt>
            <dd className="operation-error">{r.error}</dd>
          </>
        ) : null}
      </dl>
      {r.action === "assignment.apply" && planRunId ? (
        <Section title="What it would change">
          <PlanDiff assignment={assignment} runId={planRunId} />
        </Section>
      ) : null}
      {r.action === "agent.apply" && planOperationId ? (
        <Section title="What it would change">
          <AgentPlanDiff nodeId={r.target_name} name={agentName(r)} operationId={planOperationId} />
        </Section>
      ) : null}
      <TerminalPassLink request={r} />
      <CommandRunContentView request={r} />
      <CatalogWriteContentView request={r} />
      {r.status === "pending" ? <DecideForm request={r} /> : null}
      <Section title="Decisions">
        {r.decisions.length ? (
          <ul className="stack request-decisions" data-testid="request-decisions">
            {r.decisions.map((d) => (
              <li key={`${d.operator_id}-${d.at}`}>
                <strong>{d.operator_name}</strong> {d.decision === "approve" ? "approved" : "denied"}{" "}
                <Time value={d.at} />
                {d.comment ? <blockquote>{d.comment}</blockquote> : null}
              </li>
            ))}
          </ul>
        ) : (
          <p className="muted">No decisions yet.</p>
        )}
      </Section>
      <Section title="Frozen content">
        <p className="muted">
          What was submitted; the approval binds to its hash{" "}
          <code className="mono">{r.content_hash.slice(0, 16)}…</code>
        </p>
        {/* biome-ignore lint/a11y/noNoninteractiveTabindex: a scrollable region must be focusable to be scrolled by keyboard. */}
        <section className="request-content card" tabIndex={0} aria-label="Frozen content (JSON)">
          <pre className="mono">{JSON.stringify(r.content, null, 2)}</pre>
        </section>
      </Section>
    </>
  );
}

function DecideForm({ request: r }: { request: ChangeRequest }) {
  const { operator, isAdmin } = useSession();
  const decide = useDecide(r.id);
  const [comment, setComment] = useState("");
  const [done, setDone] = useState<Decision | undefined>();
  const mayCancel = isAdmin || operator.id === r.requester.id;
  // The server says which requests carry a plan that can go stale (plan_changed).
  const mayReplan = mayCancel && r.replannable;
  const send = (decision: Decision) => {
    setDone(undefined);
    decide.mutate(
      { decision, comment },
      {
        onSuccess: () => {
          setDone(decision);
          setComment("");
        },
      },
    );
  };
  return (
    <Section title="Decide">
      <form className="stack card decision-form" aria-label="Decide" onSubmit={(e) => e.preventDefault()}>
        <Field label="Comment" hint="recorded with your decision">
          <textarea value={comment} onChange={(e) => setComment(e.target.value)} rows={3} />
        </Field>
        <div className="toolbar">
          <button type="button" className="btn btn-primary" disabled={decide.isPending} onClick={() => send("approve")}>
            Approve
          </button>
          <button type="button" className="btn btn-danger" disabled={decide.isPending} onClick={() => send("deny")}>
            Deny
          </button>
          {mayReplan ? (
            <button type="button" className="btn" disabled={decide.isPending} onClick={() => send("replan")}>
              Re-plan
            </button>
          ) : null}
          {mayCancel ? (
            <button type="button" className="btn" disabled={decide.isPending} onClick={() => send("cancel")}>
              Cancel request
            </button>
          ) : null}
        </div>
        {decide.error ? <DecisionProblem error={decide.error} /> : null}
        {done ? (
          <Banner kind="success">
            {done === "replan" ? "Re-planned: the new plan is above, and it needs approval again." : "Recorded."}
          </Banner>
        ) : null}
      </form>
    </Section>
  );
}

/** The agent's name as frozen in the request (its node id when it had none). */
const agentName = (r: ChangeRequest) => {
  const name = (r.content as Record<string, unknown>).name;
  return typeof name === "string" && name ? name : r.target_name;
};

function RequestTarget({ request: r }: { request: ChangeRequest }) {
  return (
    <>
      {r.target_type === "assignment" ? (
        <>
          assignment <Link href={`/assignments/${encodeURIComponent(r.target_name)}`}>{r.target_name}</Link>
        </>
      ) : r.target_type === "agent" ? (
        <>
          agent <Link href={`/agents/${encodeURIComponent(r.target_name)}`}>{agentName(r)}</Link>
        </>
      ) : (
        `${r.target_type} ${r.target_name}`
      )}
    </>
  );
}

/** What the execution started: the apply run or operation, linked. */
function RequestResult({ request: r, assignment }: { request: ChangeRequest; assignment: string }) {
  const result = r.result ?? "";
  return (
    <>
      {r.action === "assignment.apply" ? (
        <Link href={`/assignments/${encodeURIComponent(assignment)}/runs/${encodeURIComponent(result)}`}>
          apply run {result}
        </Link>
      ) : r.action === "agent.apply" ? (
        <Link href={`/operations/${encodeURIComponent(result)}`}>apply {result}</Link>
      ) : (
        <span className="mono">{result}</span>
      )}
    </>
  );
}
