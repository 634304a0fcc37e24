// Which policy holds an action: one covering the action whose selector matches at least one of the
// agents (or `*` for actions without agents); the strictest wins (most approvals, then by name).
import { isApprovalAction, matchSelector, parseSelector, type ApprovalAgentRef } from "@orch/contracts";
import { invalid, type Queryable } from "@orch/kit";
import { policiesDb, type PolicyRow } from "./policies-db.js";

type AgentRef = Pick<ApprovalAgentRef, "id" | "name" | "attributes" | "tags">;

function matches(p: PolicyRow, agents: readonly AgentRef[]): boolean {
  const sel = parseSelector(p.selector);
  if (sel.all) return true;
  return agents.some((a) =>
    matchSelector(sel, { node_id: a.id, name: a.name, tags: { ...a.tags }, attributes: { ...a.attributes } }),
  );
}

export function strictest(policies: readonly PolicyRow[], agents: readonly AgentRef[]): PolicyRow | undefined {
  return policies
    .filter((p) => matches(p, agents))
    .sort((a, b) => b.approvals_required - a.approvals_required || a.name.localeCompare(b.name))[0];
}

export function checkAction(action: string): void {
  if (!isApprovalAction(action)) throw invalid("invalid_request", `unknown action '${action}'`, { field: "action" });
}

export async function matchingPolicy(
  db: Queryable,
  action: string,
  agents: readonly AgentRef[],
): Promise<PolicyRow | undefined> {
  checkAction(action);
  return strictest(await policiesDb.forAction(db, action), agents);
}
