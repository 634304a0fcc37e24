/**
 * An executed `terminal.open` request records a one-time pass for its requester (docs/approvals.md):
 * the terminal is opened by them, not by the approval. Its requester gets the link that opens it
 * with the pass; anyone else sees nothing (the pass is not theirs).
 */
import { Link } from "wouter";
import type { ChangeRequest } from "../../api/approvals";
import { useSession } from "../../api/session";

export function TerminalPassLink({ request: r }: { request: ChangeRequest }) {
  const { operator } = useSession();
  if (r.action !== "terminal.open" || r.status !== "executed" || r.requester.id !== operator.id) return null;
  const agent = (r.content as { agent?: { node_id?: unknown } }).agent;
  const nodeId = typeof agent?.node_id === "string" ? agent.node_id : r.target_name;
  const href = `/agents/${encodeURIComponent(nodeId)}/terminal?request=${encodeURIComponent(r.id)}`;
  return (
    <p className="actions">
      <Link href={href} className="btn" data-testid="request-open-terminal">
        Open terminal
      </Link>{" "}
      <span className="muted">(once, with the pass this approval gave you)</span>
    </p>
  );
}
