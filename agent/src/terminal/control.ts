import { isPtyDim } from "@orch/contracts";

/**
 * Control messages on `orch.term.<session_id>.ctl` (JSON). The subject is shared by every party,
 * so each side acts only on the types meant for it and ignores the rest (including its own).
 * The catalogue is in docs/terminal.md.
 */
export type ControlMessage =
  | { type: "resize"; cols: number; rows: number }
  | { type: "attach" }
  | { type: "detach" }
  | { type: "keepalive" }
  | { type: "close"; reason?: string }
  | { type: "ended"; status?: string; reason?: string }
  | { type: "heartbeat" }
  | { type: "exit"; code: number; signal: number; reason: string };

/** Parses a control message; undefined for anything malformed or unknown (never throws). */
export function parseControl(data: Uint8Array): ControlMessage | undefined {
  let v: unknown;
  try {
    v = JSON.parse(Buffer.from(data).toString("utf8"));
  } catch {
    return undefined;
  }
  if (!v || typeof v !== "object") return undefined;
  const m = v as Record<string, unknown>;
  switch (m.type) {
    case "resize":
      return isPtyDim(m.cols) && isPtyDim(m.rows) ? { type: "resize", cols: m.cols, rows: m.rows } : undefined;
    case "attach":
    case "detach":
    case "keepalive":
    case "heartbeat":
      return { type: m.type };
    case "close":
    case "ended":
      return { type: m.type, ...(typeof m.reason === "string" ? { reason: m.reason } : {}) };
    case "exit":
      return {
        type: "exit",
        code: Number(m.code) || 0,
        signal: Number(m.signal) || 0,
        reason: String(m.reason ?? "exit"),
      };
    default:
      return undefined;
  }
}

export const encodeControl = (m: ControlMessage): Uint8Array => Buffer.from(JSON.stringify(m));

export const termSubject = (sessionId: string, kind: "in" | "out" | "ctl") => `orch.term.${sessionId}.${kind}`;
