/** The words of the approval banner (approval-banner.tsx), apart from React for unit tests. */
import type { ApprovalPolicy } from "../../api/approvals";

/** "1 approval from role:admin", "2 approvals from operator:bob or role:admin". */
export function approvalsText(p: Pick<ApprovalPolicy, "approvals_required" | "approvers">): string {
  const n = p.approvals_required;
  const who =
    p.approvers.length > 1 ? `${p.approvers.slice(0, -1).join(", ")} or ${p.approvers.at(-1)}` : p.approvers[0];
  return `${n} approval${n === 1 ? "" : "s"}${who ? ` from ${who}` : ""}`;
}

/** The policies that hold `action`, in the API's order (by name). */
export function policiesHolding<P extends Pick<ApprovalPolicy, "actions">>(
  policies: readonly P[] | undefined,
  action: string,
): P[] {
  return (policies ?? []).filter((p) => p.actions.includes(action));
}
