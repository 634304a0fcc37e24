// Re-planning a pending change request whose plan went stale (the approval answered plan_changed):
// the executing service freezes the action again as it would run now and starts a fresh plan; the
// request keeps its id, reason and history, takes the new content and hash, and needs approval again.
import type { ApprovalService, DecideChangeRequestRequest } from "@orch/contracts";
import { forbidden, invalid, precondition, type CallContext, type Handlers } from "@orch/kit";
import { eligibleOperatorIds } from "./approvers.js";
import type { ApprovalsContext } from "./context.js";
import { expire } from "./decide.js";
import { loadRequest, requestNotFound } from "./handlers-requests.js";
import { requestsDb, type RequestRow } from "./requests-db.js";

type ReplanHandlers = Pick<Handlers<typeof ApprovalService>, "replanChangeRequest">;

const notPending = (r: RequestRow) =>
  precondition("change_request_not_pending", `change request ${r.id} is ${r.status}`, { status: r.status });

async function replan(c: ApprovalsContext, req: DecideChangeRequestRequest, ctx: CallContext) {
  if (req.comment.length > 2000)
    throw invalid("invalid_request", "comment is longer than 2000 characters", { field: "comment" });
  const { actor } = ctx;
  const before = await requestsDb.byId(c.deps.pool, req.id);
  if (!before) throw requestNotFound(req.id);
  if (actor.id !== before.requester_id && actor.role !== "admin")
    throw forbidden("not_change_requester", "only the requester or an admin may re-plan a change request");
  if (before.status !== "pending") throw notPending(before);
  const replanner = c.replanners[before.action];
  if (!replanner)
    throw precondition("replan_impossible", `a ${before.action} change request has no plan to make again`, {
      action: before.action,
    });
  // Outside the transaction: it starts a plan in the executing service. The row is checked again
  // under its lock before the new content is stored.
  const next = await replanner(before);
  const outcome = await c.deps.events.tx(async (db, emit) => {
    const r = await requestsDb.byId(db, req.id, true);
    if (!r) throw requestNotFound(req.id);
    if (r.status !== "pending") throw notPending(r);
    const now = c.deps.clock.now();
    if (r.expires_at <= now) {
      await expire(db, emit, r, now);
      return "expired";
    }
    const cleared = await requestsDb.replan(db, r.id, {
      content: next.content,
      content_hash: next.contentHash,
      summary: next.summary,
    });
    const ids = await eligibleOperatorIds(db, r.approvers);
    await emit({
      type: "change_request.replanned",
      summary: `change request ${r.id} (${r.action} ${r.target_name}) re-planned by ${actor.name}: ${next.summary}`,
      actor,
      target: { id: r.id, name: r.target_name || r.action, type: "change_request" },
      metadata: {
        action: r.action,
        policy: r.policy,
        requester: { id: r.requester_id, name: r.requester_name },
        previous_content_hash: r.content_hash,
        content_hash: next.contentHash,
        approvals_cleared: cleared,
        comment: req.comment,
        notify_operator_ids: r.requester_may_approve ? ids : ids.filter((id) => id !== r.requester_id),
      },
    });
    return "replanned";
  });
  if (outcome === "expired") throw precondition("change_request_expired", `change request ${req.id} expired`);
  return loadRequest(c.deps.pool, req.id);
}

export function replanHandlers(c: ApprovalsContext): ReplanHandlers {
  return { replanChangeRequest: (req, ctx) => replan(c, req, ctx) };
}
