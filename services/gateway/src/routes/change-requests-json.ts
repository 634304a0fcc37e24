import { z } from "zod";
import type { ChangeRequest } from "@orch/contracts";
import { iso } from "../schemas.js";

const DecisionOut = z.object({
  operator_id: z.string(),
  operator_name: z.string(),
  decision: z.enum(["approve", "deny"]),
  comment: z.string(),
  at: z.string(),
});

export const ChangeRequestOut = z.object({
  id: z.string(),
  action: z.string(),
  status: z.string().describe("pending, approved, denied, cancelled, expired, executed or failed"),
  policy: z.string(),
  approvals_required: z.number().int(),
  requester: z.object({ id: z.string(), name: z.string() }),
  target_type: z.string(),
  target_name: z.string(),
  summary: z.string(),
  reason: z.string(),
  content: z.record(z.string(), z.unknown()).describe("what it would do, frozen at submission"),
  content_hash: z.string(),
  decisions: z.array(DecisionOut),
  created_at: z.string(),
  expires_at: z.string(),
  decided_at: z.string().nullable(),
  executed_at: z.string().nullable(),
  result: z.string().nullable().describe("what execution produced, e.g. a run id"),
  error: z.string().nullable(),
  replannable: z
    .boolean()
    .describe("pending, with a plan that can go stale: the requester or an admin may POST …/replan"),
});
export const ChangeRequestList = z.object({
  requests: z.array(ChangeRequestOut),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
});

const orNull = (s: string) => s || null;
const isoOrNull = (ms: number) => (ms ? iso(ms) : null);

export function changeRequestJson(r: ChangeRequest): z.infer<typeof ChangeRequestOut> {
  return {
    id: r.id,
    action: r.action,
    status: r.status,
    policy: r.policy,
    approvals_required: r.approvalsRequired,
    requester: { id: r.requester?.id ?? "", name: r.requester?.name ?? "" },
    target_type: r.targetType,
    target_name: r.targetName,
    summary: r.summary,
    reason: r.reason,
    content: r.content ?? {},
    content_hash: r.contentHash,
    decisions: r.decisions.map((d) => ({
      operator_id: d.operatorId,
      operator_name: d.operatorName,
      decision: d.decision === "deny" ? "deny" : "approve",
      comment: d.comment,
      at: iso(d.at),
    })),
    created_at: iso(r.createdAt),
    expires_at: iso(r.expiresAt),
    decided_at: isoOrNull(r.decidedAt),
    executed_at: isoOrNull(r.executedAt),
    result: orNull(r.result),
    error: orNull(r.error),
    replannable: r.replannable,
  };
}
