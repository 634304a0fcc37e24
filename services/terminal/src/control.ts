import { isPtyDim } from "@orch/contracts";

/**
 * The control messages (`orch.term.<id>.ctl`, JSON) the terminal service reads and writes; the
 * full catalogue, shared with the agent and the gateway, is in docs/terminal.md.
 */
export type Control =
  | { type: "resize"; cols: number; rows: number }
  | { type: "heartbeat" }
  | { type: "exit"; code: number; signal: number; reason: string }
  | { type: "close"; reason: string }
  | { type: "keepalive" }
  | { type: "ended"; status: string; reason: string; exit_code: number | null };

export function parseControl(data: Uint8Array): Control | undefined {
  let m: Record<string, unknown>;
  try {
    m = JSON.parse(Buffer.from(data).toString("utf8")) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (!m || typeof m !== "object") return undefined;
  switch (m.type) {
    case "resize":
      return isPtyDim(m.cols) && isPtyDim(m.rows) ? { type: "resize", cols: m.cols, rows: m.rows } : undefined;
    case "heartbeat":
      return { type: "heartbeat" };
    case "exit":
      return {
        type: "exit",
        code: Number(m.code) || 0,
        signal: Number(m.signal) || 0,
        reason: typeof m.reason === "string" ? m.reason : "exit",
      };
    case "close":
      return { type: "close", reason: typeof m.reason === "string" ? m.reason : "closed" };
    default:
      return undefined;
  }
}

export const encodeControl = (m: Control): Uint8Array => Buffer.from(JSON.stringify(m));
export const termSubject = (sessionId: string, kind: "in" | "out" | "ctl") => `orch.term.${sessionId}.${kind}`;
