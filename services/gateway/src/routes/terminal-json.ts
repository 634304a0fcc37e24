import { z } from "zod";
import { PTY_DIM_MAX, type TerminalSession } from "@orch/contracts";
import { int64 } from "../schemas.js";

export const Status = z.enum(["opening", "open", "closed", "failed"]);
export const SessionOut = z.object({
  session_id: z.string(),
  node_id: z.string(),
  node_name: z.string(),
  operator_id: z.string(),
  operator_name: z.string(),
  status: Status,
  shell: z.string(),
  cols: z.number().int().meta({ format: "int32" }).describe("width the PTY was opened with"),
  rows: z.number().int().meta({ format: "int32" }).describe("height the PTY was opened with"),
  opened_at: int64().describe("Unix seconds, UTC"),
  closed_at: int64().nullable().describe("Unix seconds, UTC; null while the session is live"),
  exit_code: z.number().int().nullable(),
  close_reason: z.string().nullable(),
});
export const SessionDetail = SessionOut.extend({
  transcript_path: z.string().nullable().describe("the asciicast v2 file on the terminal service's storage"),
  sha256: z.string().nullable().describe("SHA-256 of the finished transcript (null while live)"),
  idle_timeout_seconds: z
    .number()
    .describe("a live session without input or output for this long is closed (terminal.idle_timeout_seconds)"),
});
export const OpenOut = z.object({
  session_id: z.string(),
  ws_url: z.string().describe("WebSocket URL with a single-use ticket, valid for terminal.ticket_ttl_seconds (30 s)"),
});
/** The open answer also says which size the PTY got: a request past the PTY's limit is clamped, not refused. */
export const OpenedOut = OpenOut.extend({
  cols: z.number().int().meta({ format: "int32" }).describe(`width the PTY was opened with (at most ${PTY_DIM_MAX})`),
  rows: z.number().int().meta({ format: "int32" }).describe(`height the PTY was opened with (at most ${PTY_DIM_MAX})`),
  clamped: z
    .boolean()
    .describe(
      `true when the requested cols or rows exceeded ${PTY_DIM_MAX} and \`cols\`/\`rows\` hold the clamped size`,
    ),
});

/** POST /terminal when an approval policy holds the open: nothing was opened. */
export const HeldOut = z.object({
  status: z.literal("held"),
  change_request_id: z.string().describe("the change request waiting for approval (GET /api/v1/change-requests/{id})"),
  summary: z.string(),
});

/** The open answer from the session the terminal service stored (its cols/rows are the effective size). */
export function openedJson(
  s: TerminalSession,
  wsUrl: string,
  asked: { cols?: number | undefined; rows?: number | undefined },
): z.infer<typeof OpenedOut> {
  const clamped =
    (asked.cols !== undefined && asked.cols !== s.cols) || (asked.rows !== undefined && asked.rows !== s.rows);
  return { session_id: s.sessionId, ws_url: wsUrl, cols: s.cols, rows: s.rows, clamped };
}

const secs = (ms: number) => Math.floor(ms / 1000);

export function sessionJson(s: TerminalSession): z.infer<typeof SessionOut> {
  return {
    session_id: s.sessionId,
    node_id: s.nodeId,
    node_name: s.nodeName,
    operator_id: s.operatorId,
    operator_name: s.operatorName,
    status: Status.catch("failed").parse(s.status),
    shell: s.shell,
    cols: s.cols,
    rows: s.rows,
    opened_at: secs(s.openedAt),
    closed_at: s.closedAt ? secs(s.closedAt) : null,
    exit_code: s.exitCode ?? null,
    close_reason: s.closeReason || null,
  };
}

export const detailJson = (s: TerminalSession) => ({
  ...sessionJson(s),
  transcript_path: s.transcriptPath || null,
  sha256: s.sha256 || null,
  idle_timeout_seconds: s.idleTimeoutSeconds,
});
