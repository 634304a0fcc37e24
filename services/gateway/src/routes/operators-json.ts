import type { z } from "zod";
import type { Operator } from "@orch/contracts";
import { type OperatorOut, iso } from "../schemas.js";

export function operatorJson(o: Operator): z.infer<typeof OperatorOut> {
  return {
    id: o.id,
    name: o.name,
    public_key: o.publicKey,
    role: o.role === "admin" ? "admin" : "operator",
    active: o.active,
    created_at: iso(o.createdAt),
    created_by: o.createdBy,
    agent_selector: o.agentSelector || null,
    source: o.source || "key",
    sso_rule: o.ssoRule || null,
  };
}
