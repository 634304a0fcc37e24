/** One line about an operation: kind, status, counts or its error, and a link to its page. */
import { Link } from "wouter";
import type { StateOperation } from "../../api/state";
import { isOpen, resultText } from "../../lib/operation-text";
import { OperationBadge } from "./operation-badge";

type OperationLike = Pick<StateOperation, "id" | "kind" | "status" | "node_id" | "summary" | "error" | "error_code">;

export function OperationSummary({ operation: o, testId }: { operation: OperationLike; testId?: string }) {
  return (
    <p className="toolbar" role="status">
      <span>
        {o.kind[0]!.toUpperCase() + o.kind.slice(1)} <OperationBadge operation={o} testId={testId} />
      </span>
      <span>{isOpen(o.status) ? "waiting for the agent…" : resultText(o)}</span>
      {o.error_code ? <code className="problem-code">{o.error_code}</code> : null}
      <Link href={`/operations/${o.id}`}>Operation {o.id}</Link>
    </p>
  );
}
