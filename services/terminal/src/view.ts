import { create } from "@bufbuild/protobuf";
import { TerminalSessionSchema, type TerminalSession } from "@orch/contracts";
import { notFound, type Actor } from "@orch/kit";
import type { SessionRow } from "./db.js";

export function toSession(r: SessionRow, transcriptPath: string): TerminalSession {
  return create(TerminalSessionSchema, {
    sessionId: r.id,
    nodeId: r.node_id,
    nodeName: r.node_name,
    operatorId: r.operator_id,
    operatorName: r.operator_name,
    status: r.status,
    shell: r.shell,
    cols: r.cols,
    rows: r.rows,
    openedAt: Number(r.opened_at),
    closedAt: r.closed_at === null ? 0 : Number(r.closed_at),
    ...(r.exit_code === null ? {} : { exitCode: r.exit_code }),
    closeReason: r.close_reason ?? "",
    transcriptPath,
    sha256: r.sha256 ?? "",
  });
}

/** Admins (and trusted bus callers) see every session; an operator sees only the sessions it opened. */
export const seesAll = (actor: Actor) => actor.type === "system" || actor.role === "admin";

/**
 * The session if the actor may see it. Someone else's session is reported exactly like a missing
 * one, so ids cannot be probed.
 */
export function visible(row: SessionRow | undefined, actor: Actor, id: string): SessionRow {
  if (!row || (!seesAll(actor) && row.operator_id !== actor.id))
    throw notFound("session_not_found", `no terminal session '${id}'`);
  return row;
}
