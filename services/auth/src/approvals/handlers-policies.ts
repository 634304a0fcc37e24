// Approval policies (admin) and the evaluation the executing services ask for.
import type { ApprovalService } from "@orch/contracts";
import {
  forbidden,
  keysetPage,
  notFound,
  pageCursor,
  pageLimit,
  type CallContext,
  type Handlers,
  type Queryable,
} from "@orch/kit";
import { checkApprovers, eligibleOperatorIds } from "./approvers.js";
import type { ApprovalsContext } from "./context.js";
import { toApprovalPolicy } from "./convert.js";
import { matchingPolicy } from "./evaluate.js";
import { policiesDb, type PolicyRow } from "./policies-db.js";
import { checkPolicyInput } from "./policy-input.js";
import { refuseManagedPolicy } from "./source-policies.js";

type PolicyHandlers = Pick<
  Handlers<typeof ApprovalService>,
  "putApprovalPolicy" | "listApprovalPolicies" | "getApprovalPolicy" | "deleteApprovalPolicy" | "evaluateApproval"
>;

// The gateway enforces roles; the service checks again so a bus caller cannot skip it.
function requireAdmin(ctx: CallContext) {
  if (ctx.actor.type !== "system" && ctx.actor.role !== "admin") throw forbidden();
}

async function policy(db: Queryable, name: string, lock = false): Promise<PolicyRow> {
  const p = await policiesDb.byName(db, name, lock);
  if (!p) throw notFound("approval_policy_not_found", `no approval policy '${name}'`);
  return p;
}

function putPolicy(c: ApprovalsContext): PolicyHandlers["putApprovalPolicy"] {
  const { pool, events, clock } = c.deps;
  return async (req, ctx) => {
    requireAdmin(ctx);
    const input = checkPolicyInput(req);
    await checkApprovers(pool, input.approvers);
    const now = clock.now();
    const row = await events.tx(async (db, emit) => {
      const cur = await policiesDb.byName(db, input.name, true);
      refuseManagedPolicy(cur);
      const stored = await policiesDb.upsert(db, {
        name: input.name,
        description: input.description,
        actions: input.actions,
        selector: input.selector,
        approvals_required: input.approvalsRequired,
        approvers: input.approvers,
        requester_may_approve: input.requesterMayApprove,
        expires_after_seconds: input.expiresAfterSeconds,
        max_access_seconds: input.maxAccessSeconds,
        created_at: cur?.created_at ?? now,
        updated_at: Math.max(now, (cur?.updated_at ?? 0) + 1),
        created_by: cur?.created_by ?? ctx.actor.id,
        source: "",
        source_commit: "",
      });
      await emit({
        type: cur ? "approval_policy.updated" : "approval_policy.created",
        summary: `approval policy ${input.name} ${cur ? "changed" : "added"} by ${ctx.actor.name}`,
        actor: ctx.actor,
        target: { id: stored.name, name: stored.name, type: "approval_policy" },
        metadata: {
          actions: stored.actions,
          selector: stored.selector,
          approvals_required: stored.approvals_required,
          approvers: stored.approvers,
        },
      });
      return stored;
    });
    return toApprovalPolicy(row);
  };
}

function deletePolicy(c: ApprovalsContext): PolicyHandlers["deleteApprovalPolicy"] {
  return async (req, ctx) => {
    requireAdmin(ctx);
    await c.deps.events.tx(async (db, emit) => {
      const p = await policy(db, req.name, true);
      refuseManagedPolicy(p);
      await policiesDb.remove(db, p.name);
      await emit({
        type: "approval_policy.deleted",
        summary: `approval policy ${p.name} removed by ${ctx.actor.name}`,
        actor: ctx.actor,
        target: { id: p.name, name: p.name, type: "approval_policy" },
        metadata: { actions: p.actions, selector: p.selector },
      });
    });
    return {};
  };
}

export function policyHandlers(c: ApprovalsContext): PolicyHandlers {
  const { pool } = c.deps;
  return {
    putApprovalPolicy: putPolicy(c),
    deleteApprovalPolicy: deletePolicy(c),
    // Every operator reads the policies (what is held, who approves); only an admin writes them.
    async listApprovalPolicies(req) {
      const limit = pageLimit(req.limit);
      const rows = await policiesDb.page(pool, limit + 1, pageCursor(req.cursor, "name"));
      const { page, nextCursor } = keysetPage(rows, limit, (p) => p.name);
      return { policies: page.map(toApprovalPolicy), nextCursor };
    },
    async getApprovalPolicy(req) {
      return toApprovalPolicy(await policy(pool, req.name));
    },
    async evaluateApproval(req) {
      const p = await matchingPolicy(pool, req.action, req.agents);
      if (!p) return { required: false, policy: "", approvalsRequired: 0, expiresAfterSeconds: 0 };
      return {
        required: true,
        policy: p.name,
        approvalsRequired: p.approvals_required,
        expiresAfterSeconds: p.expires_after_seconds,
        approverIds: await eligibleOperatorIds(pool, p.approvers),
      };
    },
  };
}
