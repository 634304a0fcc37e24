import { isPtyDim } from "@orch/contracts";

/** The control messages (`orch.term.<id>.ctl`, JSON) the gateway reads and writes; catalogue in docs/terminal.md. */
export type Control =
  | { type: "resize"; cols: number; rows: number }
  | { type: "attach" }
  | { type: "detach" }
  | { type: "exit"; code: number; signal: number; reason: string }
  | { type: "ended"; status: string; reason: string; exit_code: number | null };

function parse(data: Uint8Array): Record<string, unknown> | undefined {
  try {
    const v: unknown = JSON.parse(Buffer.from(data).toString("utf8"));
    return v && typeof v === "object" && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined;
  } catch {
    return undefined;
  }
}

/** What the bus says about the session's end (the agent's exit, or the terminal service's finalisation). */
export function parseEnd(data: Uint8Array): Extract<Control, { type: "exit" | "ended" }> | undefined {
  const m = parse(data);
  if (m?.type === "exit")
    return {
      type: "exit",
      code: Number(m.code) || 0,
      signal: Number(m.signal) || 0,
      reason: String(m.reason ?? "exit"),
    };
  if (m?.type === "ended")
    return {
      type: "ended",
      status: String(m.status ?? "closed"),
      reason: String(m.reason ?? ""),
      exit_code: typeof m.exit_code === "number" ? m.exit_code : null,
    };
  return undefined;
}

/** A client's text frame: only `{"type":"resize","cols":N,"rows":N}` (1..1000) is accepted. */
export function parseClientControl(data: Uint8Array): Extract<Control, { type: "resize" }> | undefined {
  const m = parse(data);
  return m?.type === "resize" && isPtyDim(m.cols) && isPtyDim(m.rows)
    ? { type: "resize", cols: m.cols, rows: m.rows }
    : undefined;
}

export const encodeControl = (m: Control): Uint8Array => Buffer.from(JSON.stringify(m));
export const termSubject = (sessionId: string, kind: "in" | "out" | "ctl") => `orch.term.${sessionId}.${kind}`;
