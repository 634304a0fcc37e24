/** Recorded terminal sessions as table rows and fields (pure). */
import type { TerminalSession } from "@orch/client";
import { isoSeconds } from "./time.js";
import { count } from "./units.js";

/** A time that may not have happened yet; null stays null (shown as "-"). */
const when = (s: number | null) => (s === null ? null : isoSeconds(s));

export const SESSION_COLUMNS = ["SESSION", "NODE", "OPERATOR", "STATUS", "OPENED", "CLOSED", "EXIT"];

export function sessionRows(sessions: readonly TerminalSession[]): unknown[][] {
  return sessions.map((s) => [
    s.session_id,
    s.node_name || s.node_id,
    s.operator_name,
    s.status,
    when(s.opened_at),
    when(s.closed_at),
    s.exit_code,
  ]);
}

export function sessionFields(s: TerminalSession): [string, unknown][] {
  return [
    ["session_id", s.session_id],
    ["node", s.node_name ? `${s.node_name} (${s.node_id})` : s.node_id],
    ["operator", s.operator_name],
    ["status", s.status],
    ["shell", s.shell],
    ["size", `${s.cols}x${s.rows}`],
    ["opened_at", when(s.opened_at)],
    ["closed_at", when(s.closed_at)],
    ["exit_code", s.exit_code],
    ["close_reason", s.close_reason],
    ["transcript_path", s.transcript_path],
    ["sha256", s.sha256],
  ];
}

export const closedLine = (s: TerminalSession) =>
  `Closed session ${s.session_id} (${s.status}, ${s.close_reason ?? "closed"})`;

/** What a transcript download wrote, and whether its SHA-256 could be checked yet. */
export const transcriptWrittenNote = (bytes: number, file: string, verified: boolean) =>
  `wrote ${count(bytes, "byte")} to ${file}${verified ? " (SHA-256 verified)" : " (session still live: not yet sealed)"}`;
