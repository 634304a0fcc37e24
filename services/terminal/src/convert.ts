import { create } from "@bufbuild/protobuf";
import { TerminalSessionSchema, type TerminalSession } from "@orch/contracts";
import type { SessionRow } from "./db/sessions.js";

export function toSession(r: SessionRow, transcriptPath: string, idleTimeoutSeconds: number): TerminalSession {
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
    idleTimeoutSeconds,
  });
}
