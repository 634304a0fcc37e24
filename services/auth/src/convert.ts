import type { Operator } from "@orch/contracts";
import type { OperatorRow } from "./db/operators.js";
import { effectiveAccess, type GrantedAccess } from "./approvals/effective.js";

/** `grants`: the operator's access grants in force, for the effective role and selector. */
export function toOperator(r: OperatorRow, grants: readonly GrantedAccess[] = []): Operator {
  const effective = effectiveAccess(r, grants);
  return {
    $typeName: "orch.v1.Operator",
    id: r.id,
    name: r.name,
    publicKey: r.public_key ?? "",
    role: r.role,
    active: r.active,
    createdAt: Number(r.created_at),
    createdBy: r.created_by,
    agentSelector: r.agent_selector ?? "",
    source: r.sso_source ?? (r.created_by.startsWith("sso:") ? r.created_by : "key"),
    ssoRule: r.sso_rule ?? "",
    effectiveRole: effective.role,
    effectiveAgentSelector: effective.agentSelector,
  };
}
