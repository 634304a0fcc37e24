/** An operation's status badge; a drift check that found drift reads "drift found" in the warning tone. */
import type { StateOperation } from "../../api/state";
import { operationBadge } from "../../lib/operation-text";
import { Badge, toneOf } from "../../ui";
import { useDriftByOperation } from "../../api/state";

type BadgeOperation = Pick<StateOperation, "id" | "kind" | "status" | "node_id">;

export function OperationBadge({ operation: o, testId }: { operation: BadgeOperation; testId?: string }) {
  const drift = useDriftByOperation(o.node_id, o.kind === "drift" && o.status === "succeeded");
  const b = operationBadge(o, drift.data?.get(o.id));
  return (
    <Badge tone={b.warn ? "warn" : toneOf(o.status)}>
      <span data-testid={testId}>{b.text}</span>
    </Badge>
  );
}
