import { checkTerminalDim, clampTerminalDim } from "@orch/contracts";
import { invalid } from "@orch/kit";

const SHELL_RE = /^\/[^\x00-\x1f\x7f]{0,4095}$/;

/** A terminal size: 0 asks for the default; past the PTY's limit it is clamped, not refused. */
export function dimension(v: number, field: "cols" | "rows", def: number): number {
  if (v === 0) return def;
  const bad = checkTerminalDim(v);
  if (bad) throw invalid(bad.reason, `${field} ${bad.message}`, { field });
  return clampTerminalDim(v);
}

/** An optional shell: empty lets the agent pick its default. */
export function checkShell(shell: string): void {
  if (shell && !SHELL_RE.test(shell))
    throw invalid("invalid_request", "shell must be an absolute path", { field: "shell" });
}
