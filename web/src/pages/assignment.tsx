/**
 * One assignment (/assignments/:name?batch=&max_failures=): what it keeps where, the agents it matches
 * with their drift, "Plan" and "Apply" across them (rolling batches, a failure limit; Apply on more
 * than one agent is confirmed with the count), and its recent runs.
 * Starting a run goes to the run's page, which follows it live; an apply an approval policy holds
 * (202 with `change_request_id`) stays here and links to its change request instead; a notice above
 * the form says beforehand which approval policies hold applies. Operators and admins alike may run
 * and delete (the API allows operators).
 */
import { type FormEvent, useRef, useState } from "react";
import { Link, useLocation, useParams } from "wouter";
import { type Assignment, useAssignment, useDeleteAssignment } from "../api/assignments";
import { RECENT_RUNS, type RunKind, useRecentRuns, useStartRun } from "../api/runs";
import { useUrlState } from "../lib/url-state";
import {
  Badge,
  Banner,
  DeleteWithConfirm,
  Dialog,
  EmptyState,
  Field,
  fieldError,
  Page,
  ProblemMessage,
  QueryStatus,
  Section,
  Time,
} from "../ui";
import "./pages.css";
import { agentCount, confirmsApply } from "./assignments/apply-rules";
import { ApprovalBanner } from "./parts/approval-banner";
import { MatchedAgents, useMatchedAgents } from "./assignments/matched-agents";
import { OperatorName } from "./assignments/operator-name";
import { ItemTable } from "./parts/item-table";
import { RUN_TONE } from "./runs/run-counts";
import { ManagedByBanner, ownerOf } from "./sources/managed-by";
import type { HeldCatalogWrite } from "../api/catalog-held";
import { CatalogHeldNotice } from "./catalog-held-notice";
import "./runs/runs.css";

export default function AssignmentPage() {
  const { name = "" } = useParams<{ name: string }>();
  const assignment = useAssignment(name);
  const a = assignment.data;
  return (
    // An assignment a git source owns is changed in its repository: no edit or delete here (runs stay).
    <Page title={name} actions={a && !ownerOf(a) ? <AssignmentActions name={a.name} /> : null}>
      <QueryStatus query={assignment}>
        {a ? (
          <>
            <Owner assignment={a} />
            <AssignmentProps assignment={a} />
            <MatchedAgents assignment={a} />
            <RunForm assignment={a} />
            <RecentRuns name={a.name} />
          </>
        ) : null}
      </QueryStatus>
    </Page>
  );
}

function AssignmentActions({ name }: { name: string }) {
  const [, navigate] = useLocation();
  // A held delete is heard of (the hook's onSuccess) before onDeleted runs, which shows it.
  const heldDelete = useRef<HeldCatalogWrite | undefined>(undefined);
  const [held, setHeld] = useState<HeldCatalogWrite | undefined>();
  const remove = useDeleteAssignment((h) => {
    heldDelete.current = h;
  });
  return (
    <>
      {held ? <CatalogHeldNotice held={held} /> : null}
      <Link href={`/assignments/${encodeURIComponent(name)}/edit`} className="btn">
        Edit
      </Link>
      <DeleteWithConfirm
        mutation={remove}
        target={name}
        title={`Delete assignment ${name}?`}
        onDeleted={() => (heldDelete.current ? setHeld(heldDelete.current) : navigate("/assignments"))}
      >
        <p>Agents keep what was applied; nothing is removed from them.</p>
      </DeleteWithConfirm>
    </>
  );
}

function Owner({ assignment: a }: { assignment: Assignment }) {
  const owner = ownerOf(a);
  return owner ? <ManagedByBanner owner={owner} what="assignment" /> : null;
}

function AssignmentProps({ assignment: a }: { assignment: Assignment }) {
  return (
    <dl className="props card">
      <dt>Selector</dt>
      <dd className="mono">{a.selector}</dd>
      <dt>Modules</dt>
      <dd>
        {a.modules.map((m, i) => (
          <span key={m}>
            {i > 0 ? ", " : null}
            <Link href={`/modules/${encodeURIComponent(m)}`}>{m}</Link>
          </span>
        ))}
      </dd>
      <dt>Enforce</dt>
      <dd data-testid="assignment-enforce">
        {a.enforce ? "on: drift found by a scheduled check is re-applied" : "off: drift is reported only"}
      </dd>
      <dt>Description</dt>
      <dd>{a.description || "—"}</dd>
      {a.source ? (
        <>
          <dt>Apply on sync</dt>
          <dd data-testid="assignment-apply-on-sync">
            {a.apply_on_sync ? "on: applied when a sync changes it or its modules" : "off: a sync only updates it"}
          </dd>
        </>
      ) : null}
      <dt>Created</dt>
      <dd>
        <Time value={a.created_at} /> by <OperatorName id={a.created_by} />
      </dd>
    </dl>
  );
}

const BATCH = /^([1-9]\d*|([1-9]\d?|100)%)$/;

/** An apply an approval policy held: where its change request and its plan are. */
function HeldNotice({ name, held }: { name: string; held: { requestId: string; runId: string } }) {
  return (
    <Banner kind="info" testId="apply-held">
      An approval policy holds this apply: nothing was applied. It waits for approval as{" "}
      <Link href={`/requests/${encodeURIComponent(held.requestId)}`}>change request {held.requestId}</Link>; its
      approvers see what it would change in the{" "}
      <Link href={`/assignments/${encodeURIComponent(name)}/runs/${encodeURIComponent(held.runId)}`}>plan</Link>.
    </Banner>
  );
}

/**
 * Batch and failure limit live in the URL, so a prepared rollout can be bookmarked or shared. Apply
 * on more than one agent asks first, naming the count.
 */
function RunForm({ assignment: a }: { assignment: Assignment }) {
  const name = a.name;
  const matched = useMatchedAgents(a.selector).data?.length;
  const [confirming, setConfirming] = useState(false);
  const [params, setParams] = useUrlState();
  const [, navigate] = useLocation();
  const start = useStartRun(name);
  const batch = params.get("batch") ?? "";
  const maxFailures = params.get("max_failures") ?? "";
  const [kind, setKind] = useState<RunKind>("plan");
  // An apply an approval policy held: a change request to decide, not a run to follow.
  const [held, setHeld] = useState<{ requestId: string; runId: string } | undefined>();
  const batchError =
    batch.trim() && !BATCH.test(batch.trim())
      ? 'A number of agents (e.g. 5) or a percentage (e.g. "25%").'
      : fieldError(start.error, "batch");
  const failuresError =
    maxFailures.trim() && !/^\d+$/.test(maxFailures.trim())
      ? "A whole number (0 or more)."
      : fieldError(start.error, "max_failures");

  const run = (k: RunKind) => {
    setKind(k);
    setHeld(undefined);
    const b = batch.trim();
    const mf = maxFailures.trim();
    start.mutate(
      {
        kind: k,
        options: {
          ...(b ? { batch: /^\d+$/.test(b) ? Number(b) : b } : {}),
          ...(mf ? { max_failures: Number(mf) } : {}),
        },
      },
      {
        onSuccess: (r) =>
          r.change_request_id
            ? setHeld({ requestId: r.change_request_id, runId: r.run_id })
            : navigate(`/assignments/${encodeURIComponent(name)}/runs/${encodeURIComponent(r.run_id)}`),
      },
    );
  };
  const invalid = Boolean(batchError && !start.error) || Boolean(failuresError && !start.error);
  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    run("plan");
  };

  return (
    <Section title="Run">
      <ApprovalBanner action="assignment.apply" />
      <form className="run-form" onSubmit={onSubmit} aria-label="Plan or apply">
        <Field label="Batch" hint="agents per batch or a percentage; blank = all at once" error={batchError}>
          <input
            type="text"
            inputMode="numeric"
            value={batch}
            placeholder="all"
            autoComplete="off"
            spellCheck={false}
            onChange={(e) => setParams({ batch: e.target.value }, { replace: true })}
          />
        </Field>
        <Field label="Max failures" hint="stop starting batches after this many" error={failuresError}>
          <input
            type="number"
            min={0}
            value={maxFailures}
            placeholder="no limit"
            onChange={(e) => setParams({ max_failures: e.target.value }, { replace: true })}
          />
        </Field>
        <div className="toolbar">
          <button type="submit" className="btn" disabled={start.isPending || invalid}>
            {start.isPending && kind === "plan" ? "Planning…" : "Plan"}
          </button>
          <button
            type="button"
            className="btn btn-primary"
            disabled={start.isPending || invalid}
            onClick={() => (confirmsApply(matched) ? setConfirming(true) : run("apply"))}
          >
            {start.isPending && kind === "apply" ? "Applying…" : "Apply"}
          </button>
        </div>
      </form>
      <p className="muted">Plan shows what would change and changes nothing; apply changes the agents.</p>
      <Dialog
        open={confirming}
        title={`Apply ${name} to ${agentCount(matched)}?`}
        onClose={() => setConfirming(false)}
        actions={
          <button
            type="button"
            className="btn btn-primary"
            onClick={() => {
              setConfirming(false);
              run("apply");
            }}
          >
            {`Apply to ${agentCount(matched)}`}
          </button>
        }
      >
        <p data-testid="apply-confirm-text">
          {`${a.modules.join(", ")} will be applied to ${agentCount(matched)}`}
          {batch.trim() ? `, in batches of ${batch.trim()}` : ", all at once"}
          {maxFailures.trim() ? `, stopping after ${maxFailures.trim()} failures` : ""}. Plan first to see what would
          change.
        </p>
      </Dialog>
      {held ? <HeldNotice name={name} held={held} /> : null}
      {start.error && !fieldError(start.error, "batch") && !fieldError(start.error, "max_failures") ? (
        <ProblemMessage error={start.error} />
      ) : null}
    </Section>
  );
}

function RecentRuns({ name }: { name: string }) {
  const runs = useRecentRuns(name);
  const list = runs.data?.runs ?? [];
  return (
    <Section title="Runs">
      <QueryStatus query={runs}>
        <ItemTable
          label="Runs"
          className="cards"
          columns={["Started", "Kind", "Status", "Failures"]}
          items={list}
          empty={<EmptyState title="No recent runs.">Plan or apply to start one.</EmptyState>}
        >
          {(r) => (
            <tr key={r.run_id}>
              <td data-label="Started">
                <Link href={`/assignments/${encodeURIComponent(name)}/runs/${encodeURIComponent(r.run_id)}`}>
                  <Time value={r.created_at} />
                </Link>
              </td>
              <td data-label="Kind">{r.kind}</td>
              <td data-label="Status">
                <Badge tone={RUN_TONE[r.status] ?? "neutral"}>{r.status}</Badge>
              </td>
              <td data-label="Failures">{r.failures}</td>
            </tr>
          )}
        </ItemTable>
      </QueryStatus>
      {runs.data?.has_more ? <p className="muted">The {RECENT_RUNS} most recent runs.</p> : null}
    </Section>
  );
}
