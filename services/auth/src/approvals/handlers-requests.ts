// Change requests: submitted by the executing service as the requester, listed and read by operators.
import type { ApprovalService, SubmitChangeRequestRequest } from "@orch/contracts";
import { CHANGE_REQUEST_STATUSES } from "@orch/contracts";
import {
  invalid,
  keysetPage,
  notFound,
  pageCursor,
  pageLimit,
  precondition,
  type Actor,
  type Emit,
  type Handlers,
  type Queryable,
} from "@orch/kit";
import { approverTokens, eligibleOperatorIds } from "./approvers.js";
import type { ApprovalsContext } from "./context.js";
import { toChangeRequest } from "./convert.js";
import { matchingPolicy } from "./evaluate.js";
import type { PolicyRow } from "./policies-db.js";
import { requestsDb, type RequestRow } from "./requests-db.js";

type RequestHandlers = Pick<
  Handlers<typeof ApprovalService>,
  "submitChangeRequest" | "listChangeRequests" | "getChangeRequest"
>;

export const requestNotFound = (id: string) =>
  notFound("change_request_not_found", `no change request '${id}'`, { field: "id" });

/** The request with its decisions, as the API shows it. */
export async function loadRequest(db: Queryable, id: string) {
  const r = await requestsDb.byId(db, id);
  if (!r) throw requestNotFound(id);
  return toChangeRequest(r, await requestsDb.decisions(db, [r.id]));
}

function checkText(req: SubmitInput) {
  const limits = { target_type: [req.targetType, 64], target_name: [req.targetName, 256], summary: [req.summary, 500] };
  for (const [field, [value, max]] of Object.entries(limits) as [string, [string, number]][])
    if (value.length > max) throw invalid("invalid_request", `${field} is longer than ${max} characters`, { field });
  if (req.reason.length > 2000)
    throw invalid("invalid_request", "reason is longer than 2000 characters", { field: "reason" });
}

function newRow(c: ApprovalsContext, req: SubmitInput, p: PolicyRow, actor: Actor): RequestRow {
  const now = c.deps.clock.now();
  return {
    id: c.deps.ids.next(),
    action: req.action,
    status: "pending",
    policy: p.name,
    approvals_required: p.approvals_required,
    approvers: p.approvers,
    requester_may_approve: p.requester_may_approve,
    requester_id: actor.id,
    requester_name: actor.name,
    target_type: req.targetType,
    target_name: req.targetName,
    summary: req.summary,
    reason: req.reason,
    content: req.content ?? {},
    content_hash: req.contentHash,
    created_at: now,
    expires_at: now + p.expires_after_seconds * 1000,
    decided_at: null,
    executed_at: null,
    result: "",
    error: "",
  };
}

type SubmitInput = Omit<SubmitChangeRequestRequest, "$typeName" | "agents">;

/**
 * Stores a pending request under policy `p` with its `change_request.created` event (addressed to the
 * approvers); `also` adds the caller's own changes and events to the same transaction.
 */
export async function createRequest(
  c: ApprovalsContext,
  req: SubmitInput,
  p: PolicyRow,
  actor: Actor,
  also?: (db: Queryable, emit: Emit, row: RequestRow) => Promise<void>,
): Promise<RequestRow> {
  const row = newRow(c, req, p, actor);
  await c.deps.events.tx(async (db, emit) => {
    await requestsDb.insert(db, row);
    const ids = await eligibleOperatorIds(db, p.approvers);
    await emit({
      type: "change_request.created",
      summary: `${actor.name} asks for approval: ${row.summary || `${row.action} ${row.target_name}`}`,
      actor,
      target: { id: row.id, name: row.target_name || row.action, type: "change_request" },
      metadata: {
        action: row.action,
        policy: p.name,
        approvals_required: p.approvals_required,
        target_type: row.target_type,
        target_name: row.target_name,
        expires_at: row.expires_at,
        notify_operator_ids: p.requester_may_approve ? ids : ids.filter((id) => id !== actor.id),
      },
    });
    await also?.(db, emit, row);
  });
  return row;
}

function submit(c: ApprovalsContext): RequestHandlers["submitChangeRequest"] {
  return async (req, ctx) => {
    checkText(req);
    const p = await matchingPolicy(c.deps.pool, req.action, req.agents);
    if (!p) throw precondition("approval_not_required", `no approval policy holds ${req.action} on these targets`);
    return toChangeRequest(await createRequest(c, req, p, ctx.actor), []);
  };
}

function list(c: ApprovalsContext): RequestHandlers["listChangeRequests"] {
  const { pool } = c.deps;
  return async (req, ctx) => {
    if (req.status && !(CHANGE_REQUEST_STATUSES as readonly string[]).includes(req.status))
      throw invalid("invalid_request", `status must be one of ${CHANGE_REQUEST_STATUSES.join(", ")}`, {
        field: "status",
      });
    const limit = pageLimit(req.limit);
    const rows = await requestsDb.page(pool, {
      status: req.status,
      requesterId: req.mine ? ctx.actor.id : "",
      undecidedBy: req.toApprove ? ctx.actor.id : "",
      approverTokens: req.toApprove ? await approverTokens(pool, ctx.actor) : [],
      after: pageCursor(req.cursor, "ulid"),
      limit: limit + 1,
    });
    const { page, nextCursor } = keysetPage(rows, limit, (r) => r.id);
    const decisions = await requestsDb.decisions(
      pool,
      page.map((r) => r.id),
    );
    return { requests: page.map((r) => toChangeRequest(r, decisions)), nextCursor };
  };
}

export function requestHandlers(c: ApprovalsContext): RequestHandlers {
  return {
    submitChangeRequest: submit(c),
    listChangeRequests: list(c),
    getChangeRequest: (req) => loadRequest(c.deps.pool, req.id),
  };
}
