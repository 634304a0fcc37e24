import { z } from "zod";
import type { AccessGrant } from "@orch/contracts";
import { iso } from "../schemas.js";

export const AccessGrantOut = z.object({
  id: z.string(),
  operator_id: z.string(),
  operator_name: z.string(),
  request_id: z.string(),
  agent_selector: z.string().nullable(),
  role: z.string().nullable(),
  reason: z.string(),
  granted_at: z.string(),
  expires_at: z.string(),
  ended_at: z.string().nullable(),
  end_reason: z.enum(["expired", "revoked"]).nullable(),
  ended_by: z.string().nullable(),
  active: z.boolean().describe("in force now"),
});

export const grantJson = (g: AccessGrant): z.infer<typeof AccessGrantOut> => ({
  id: g.id,
  operator_id: g.operatorId,
  operator_name: g.operatorName,
  request_id: g.requestId,
  agent_selector: g.agentSelector || null,
  role: g.role || null,
  reason: g.reason,
  granted_at: iso(g.grantedAt),
  expires_at: iso(g.expiresAt),
  ended_at: g.endedAt ? iso(g.endedAt) : null,
  end_reason: g.endReason === "expired" || g.endReason === "revoked" ? g.endReason : null,
  ended_by: g.endedBy || null,
  active: g.active,
});

export const AccessGrantList = z.object({
  grants: z.array(AccessGrantOut),
  has_more: z.boolean(),
  next_cursor: z.string().nullable(),
});
