import { SYSTEM_ACTOR } from "@orch/kit";
import type { SessionRow } from "./db/sessions.js";

/** The audit event of a finalised session. */
export function closedEvent(r: SessionRow) {
  const by = r.closed_by_id
    ? { id: r.closed_by_id, name: r.closed_by_name ?? r.closed_by_id, type: "operator" }
    : r.close_reason === "exit" || r.close_reason === "detached"
      ? { id: r.operator_id, name: r.operator_name, type: "operator" }
      : SYSTEM_ACTOR;
  const duration = Math.max(0, Math.round(((r.closed_at ?? r.opened_at) - r.opened_at) / 1000));
  return {
    type: "terminal.session.closed" as const,
    severity: r.status === "failed" ? ("warning" as const) : undefined,
    summary: `terminal session of ${r.operator_name} on ${r.node_name || r.node_id} ${r.status} (${r.close_reason}) after ${duration}s`,
    actor: by,
    target: { id: r.id, name: r.node_name || r.node_id, type: "terminal_session" },
    metadata: {
      node_id: r.node_id,
      node_name: r.node_name,
      operator_id: r.operator_id,
      operator_name: r.operator_name,
      status: r.status,
      reason: r.close_reason,
      exit_code: r.exit_code,
      duration_seconds: duration,
      sha256: r.sha256,
    },
  };
}
