// An operator's access with its just-in-time grants in force: what tokens resolve to and what live
// connections are re-checked against (docs/approvals.md).
import { joinScopes } from "@orch/contracts";

export interface GrantedAccess {
  role: string;
  agent_selector: string;
}

export function effectiveAccess(
  op: { role: string; agent_selector: string | null },
  grants: readonly GrantedAccess[],
): { role: "admin" | "operator"; agentSelector: string } {
  if (op.role === "admin" || grants.some((g) => g.role === "admin")) return { role: "admin", agentSelector: "" };
  const granted = grants.map((g) => g.agent_selector).filter(Boolean);
  return { role: "operator", agentSelector: joinScopes(op.agent_selector ?? "", granted) };
}
