/**
 * Before an apply: which approval policies hold it (docs/approvals.md), so a requester knows the
 * change will wait and who decides it, as the held-apply notice says after the fact. Shown on the
 * pages that start an action (`assignment.apply` on the Assignments and assignment pages,
 * `agent.apply` on an agent's page); nothing when no policy holds the action, and nothing when the
 * policies cannot be read (the page works without it).
 */
import { AGENTLESS_ACTIONS } from "@orch/contracts/approval-actions";
import { Link } from "wouter";
import { type ApprovalPolicy, useApprovalPolicies } from "../../api/approvals";
import { Banner } from "../../ui";
import { approvalsText, policiesHolding } from "./approval-rules";

function PolicyLine({ policy, action }: { policy: ApprovalPolicy; action: string }) {
  // Secret and catalog writes touch no agent: only `*` policies hold them, so the selector says nothing.
  const agentless = (AGENTLESS_ACTIONS as readonly string[]).includes(action);
  return (
    <>
      policy <strong data-testid="approval-banner-policy">{policy.name}</strong> holds <code>{action}</code>{" "}
      {agentless ? null : policy.selector === "*" ? (
        "on every agent "
      ) : (
        <>
          on agents matching <code data-testid="approval-banner-selector">{policy.selector}</code>{" "}
        </>
      )}
      ({approvalsText(policy)})
    </>
  );
}

/**
 * "Applies here need approval: policy prod-applies holds assignment.apply on agents matching
 * env=prod (1 approval from role:admin). A held apply becomes a change request — see Requests."
 */
/** How each banner opens and what a held action becomes, by action: the page says what it holds. */
const WORDING: Record<string, { lead: string; held: string }> = {
  "assignment.apply": { lead: "Applies here need approval", held: "A held apply" },
  "agent.apply": { lead: "Applies here need approval", held: "A held apply" },
  "command.run": { lead: "Command runs here need approval", held: "A held run" },
  "terminal.open": { lead: "Opening a terminal here needs approval", held: "A held terminal" },
  "secret.write": { lead: "Secret changes need approval", held: "A held change" },
  "catalog.write": { lead: "Changes here need approval", held: "A held change" },
};
const DEFAULT_WORDING = { lead: "This needs approval", held: "A held action" };

export function ApprovalBanner({ action }: { action: string }) {
  const words = WORDING[action] ?? DEFAULT_WORDING;
  const policies = useApprovalPolicies();
  const holding = policiesHolding(policies.data, action);
  if (holding.length === 0) return null;
  return (
    <Banner kind="info" testId="approval-banner" className="approval-banner">
      {words.lead}:{" "}
      {holding.map((p, i) => (
        <span key={p.name}>
          {i > 0 ? "; " : null}
          <PolicyLine policy={p} action={action} />
        </span>
      ))}
      . {words.held} becomes a change request — see <Link href="/requests">Requests</Link>.
    </Banner>
  );
}
