// Approve, deny and cancel: one transaction holding the request's row lock, so two replicas racing
// decide one after the other and the second sees the first's outcome. A refused attempt rolls back
// and emits nothing; the caller gets the code.
import type { ApprovalService, DecideChangeRequestRequest } from "@orch/contracts";
import {
  forbidden,
  invalid,
  OrchError,
  precondition,
  SYSTEM_ACTOR,
  type Actor,
  type CallContext,
  type Emit,
  type Handlers,
  type Queryable,
} from "@orch/kit";
import { isEligible } from "./approvers.js";
import { requesterActor, type ApprovalsContext, type ApproverRef } from "./context.js";
import { loadRequest, requestNotFound } from "./handlers-requests.js";
import { requestsDb, type RequestRow } from "./requests-db.js";

type DecideHandlers = Pick<
  Handlers<typeof ApprovalService>,
  "approveChangeRequest" | "denyChangeRequest" | "cancelChangeRequest"
>;

interface Step {
  c: ApprovalsContext;
  db: Queryable;
  emit: Emit;
  r: RequestRow;
  actor: Actor;
  comment: string;
  now: number;
  /** Run after the commit (an executor's broadcast). */
  after: (() => void)[];
}

const targetOf = (r: RequestRow) => ({ id: r.id, name: r.target_name || r.action, type: "change_request" });
const requesterOf = (r: RequestRow) => ({ id: r.requester_id, name: r.requester_name });

/** Marks a pending request expired with its event (the caller holds the row lock). */
export async function expire(db: Queryable, emit: Emit, r: RequestRow, now: number): Promise<void> {
  await requestsDb.setStatus(db, r.id, { status: "expired", decided_at: now });
  await emit({
    type: "change_request.expired",
    summary: `change request ${r.id} (${r.action} ${r.target_name}) expired undecided`,
    actor: SYSTEM_ACTOR,
    target: targetOf(r),
    metadata: { action: r.action, policy: r.policy, requester: requesterOf(r), expires_at: r.expires_at },
  });
}

/**
 * Records an approver's decision after the checks every one passes: not the requester (unless the
 * policy allows it), eligible, not twice. Returns the approvals recorded before this one.
 */
async function recordDecision(s: Step, decision: "approve" | "deny"): Promise<ApproverRef[]> {
  const { db, r, actor } = s;
  if (actor.id === r.requester_id && !r.requester_may_approve)
    throw forbidden("own_change_request", "the requester may not decide their own change request");
  if (!(await isEligible(db, actor, r.approvers)))
    throw forbidden("not_an_approver", `${actor.name} is not an approver of change request ${r.id}`);
  const decisions = await requestsDb.decisions(db, [r.id]);
  if (decisions.some((d) => d.operator_id === actor.id))
    throw precondition("already_decided", `${actor.name} already decided change request ${r.id}`);
  await requestsDb.addDecision(db, {
    request_id: r.id,
    operator_id: actor.id,
    operator_name: actor.name,
    decision,
    comment: s.comment,
    at: s.now,
  });
  return decisions.filter((d) => d.decision === "approve").map((d) => ({ id: d.operator_id, name: d.operator_name }));
}

async function emitDecision(s: Step, type: Parameters<Emit>[0]["type"], verb: string, approvers: ApproverRef[]) {
  await s.emit({
    type,
    summary: `change request ${s.r.id} (${s.r.action} ${s.r.target_name}) ${verb} by ${s.actor.name}`,
    actor: s.actor,
    target: targetOf(s.r),
    metadata: {
      action: s.r.action,
      policy: s.r.policy,
      requester: requesterOf(s.r),
      approvers,
      approvals: approvers.length,
      approvals_required: s.r.approvals_required,
      comment: s.comment,
    },
  });
}

/** Runs the action's executor, if any: executed, failed, or `plan_changed` thrown (the caller rolls back). */
async function execute(s: Step, approvers: ApproverRef[]): Promise<void> {
  const run = s.c.executors[s.r.action];
  if (!run) return;
  const base = { action: s.r.action, policy: s.r.policy, requester: requesterOf(s.r), approvers };
  try {
    const { result } = await run(s.r, approvers, {
      db: s.db,
      emit: s.emit,
      afterCommit: (fn) => s.after.push(fn),
    });
    await requestsDb.setStatus(s.db, s.r.id, { status: "executed", executed_at: s.c.deps.clock.now(), result });
    await s.emit({
      type: "change_request.executed",
      summary: `change request ${s.r.id} (${s.r.action} ${s.r.target_name}) executed as ${s.r.requester_name}`,
      actor: requesterActor(s.r),
      target: targetOf(s.r),
      metadata: { ...base, result },
    });
  } catch (err) {
    if (err instanceof OrchError && err.reason === "plan_changed") throw err;
    const error = err instanceof Error ? err.message : String(err);
    await requestsDb.setStatus(s.db, s.r.id, { status: "failed", error });
    await s.emit({
      type: "change_request.failed",
      summary: `change request ${s.r.id} (${s.r.action} ${s.r.target_name}) failed: ${error}`,
      actor: SYSTEM_ACTOR,
      target: targetOf(s.r),
      metadata: { ...base, error },
    });
  }
}

async function approveStep(s: Step): Promise<void> {
  const approvers = [...(await recordDecision(s, "approve")), { id: s.actor.id, name: s.actor.name }];
  if (approvers.length < s.r.approvals_required) {
    await emitDecision(s, "change_request.approval_recorded", "approved (more approvals needed)", approvers);
    return;
  }
  await requestsDb.setStatus(s.db, s.r.id, { status: "approved", decided_at: s.now });
  await emitDecision(s, "change_request.approved", "approved", approvers);
  await execute(s, approvers);
}

async function denyStep(s: Step): Promise<void> {
  const approvers = await recordDecision(s, "deny");
  await requestsDb.setStatus(s.db, s.r.id, { status: "denied", decided_at: s.now });
  await emitDecision(s, "change_request.denied", "denied", approvers);
}

async function cancelStep(s: Step): Promise<void> {
  const { actor, r } = s;
  if (actor.id !== r.requester_id && actor.role !== "admin" && actor.type !== "system")
    throw forbidden("not_change_requester", "only the requester or an admin may cancel a change request");
  await requestsDb.setStatus(s.db, r.id, { status: "cancelled", decided_at: s.now });
  await s.emit({
    type: "change_request.cancelled",
    summary: `change request ${r.id} (${r.action} ${r.target_name}) cancelled by ${actor.name}`,
    actor,
    target: targetOf(r),
    metadata: { action: r.action, policy: r.policy, requester: requesterOf(r), comment: s.comment },
  });
}

function decider(c: ApprovalsContext, step: (s: Step) => Promise<void>) {
  return async (req: DecideChangeRequestRequest, ctx: CallContext) => {
    if (req.comment.length > 2000)
      throw invalid("invalid_request", "comment is longer than 2000 characters", { field: "comment" });
    const after: (() => void)[] = [];
    const outcome = await c.deps.events.tx(async (db, emit) => {
      const r = await requestsDb.byId(db, req.id, true);
      if (!r) throw requestNotFound(req.id);
      if (r.status !== "pending")
        throw precondition("change_request_not_pending", `change request ${r.id} is ${r.status}`, { status: r.status });
      const now = c.deps.clock.now();
      if (r.expires_at <= now) {
        await expire(db, emit, r, now);
        return "expired";
      }
      await step({ c, db, emit, r, actor: ctx.actor, comment: req.comment, now, after });
      return "decided";
    });
    for (const fn of after) fn();
    if (outcome === "expired") throw precondition("change_request_expired", `change request ${req.id} expired`);
    return loadRequest(c.deps.pool, req.id);
  };
}

export function decideHandlers(c: ApprovalsContext): DecideHandlers {
  return {
    approveChangeRequest: decider(c, approveStep),
    denyChangeRequest: decider(c, denyStep),
    cancelChangeRequest: decider(c, cancelStep),
  };
}
