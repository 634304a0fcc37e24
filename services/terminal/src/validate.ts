import { invalid } from "@orch/kit";

const SHELL_RE = /^\/[^\x00-\x1f\x7f]{0,4095}$/;

/** A terminal size: 0 asks for the default. */
export function dimension(v: number, field: "cols" | "rows", def: number): number {
  if (v === 0) return def;
  if (!Number.isInteger(v) || v < 1 || v > 1000)
    throw invalid("invalid_request", `${field} must be an integer between 1 and 1000`, { field });
  return v;
}

/** An optional shell: empty lets the agent pick its default. */
export function checkShell(shell: string): void {
  if (shell && !SHELL_RE.test(shell))
    throw invalid("invalid_request", "shell must be an absolute path", { field: "shell" });
}
