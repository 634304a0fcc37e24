/**
 * Before an apply: which approval policies hold it (docs/approvals.md), so a requester knows the
 * change will wait and who decides it, as the held-apply notice says after the fact. Shown on the
 * pages that start an action (`assignment.apply` on the Assignments and assignment pages,
 * `agent.apply` on an agent's page); nothing when no policy holds the action, and nothing when the
 * policies cannot be read (the page works without it).
 */
import { Link } from "wouter";
import { type ApprovalPolicy, useApprovalPolicies } from "../../api/approvals";
import { Banner } from "../../ui";
import { approvalsText, policiesHolding } from "./approval-rules";

function PolicyLine({ policy, action }: { policy: ApprovalPolicy; action: string }) {
  return (
    <>
      policy <strong data-testid="approval-banner-policy">{policy.name}</strong> holds <code>{action}</code>{" "}
      {policy.selector === "*" ? (
        "on every agent"
      ) : (
        <>
          on agents matching <code data-testid="approval-banner-selector">{policy.selector}</code>
        </>
      )}{" "}
      ({approvalsText(policy)})
    </>
  );
}

/**
 * "Applies here need approval: policy prod-applies holds assignment.apply on agents matching
 * env=prod (1 approval from role:admin). A held apply becomes a change request — see Requests."
 */
export function ApprovalBanner({ action }: { action: string }) {
  const policies = useApprovalPolicies();
  const holding = policiesHolding(policies.data, action);
  if (holding.length === 0) return null;
  return (
    <Banner kind="info" testId="approval-banner" className="approval-banner">
      Applies here need approval:{" "}
      {holding.map((p, i) => (
        <span key={p.name}>
          {i > 0 ? "; " : null}
          <PolicyLine policy={p} action={action} />
        </span>
      ))}
      . A held apply becomes a change request — see <Link href="/requests">Requests</Link>.
    </Banner>
  );
}
