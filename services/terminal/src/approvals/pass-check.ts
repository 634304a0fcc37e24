import type { PassRow } from "../db/passes.js";

export type PassRefusal = { code: "terminal_pass_invalid" | "terminal_pass_used"; message: string };

/**
 * Whether `pass` lets this operator open this terminal now. Unknown, foreign, other-agent,
 * other-shell and expired passes get one code (the caller learns nothing about others' passes);
 * a used one of the caller's own says so.
 */
export function checkPass(
  pass: PassRow | undefined,
  use: { changeRequestId: string; operatorId: string; nodeId: string; shell: string; now: number },
): PassRefusal | null {
  const refused = (why: string): PassRefusal => ({
    code: "terminal_pass_invalid",
    message: `change request '${use.changeRequestId}' gives no terminal pass here: ${why}`,
  });
  if (!pass || pass.operator_id !== use.operatorId) return refused("no executed terminal.open request of yours");
  if (pass.node_id !== use.nodeId) return refused(`it was approved for agent ${pass.node_name || pass.node_id}`);
  if (use.shell && use.shell !== pass.shell) return refused(`it was approved for shell '${pass.shell || "default"}'`);
  if (pass.used_at !== null)
    return { code: "terminal_pass_used", message: `the pass of change request '${use.changeRequestId}' was used` };
  if (pass.expires_at <= use.now) return refused("the pass expired");
  return null;
}
