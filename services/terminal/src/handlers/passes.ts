import type { TerminalService } from "@orch/contracts";
import { forbidden, invalid, precondition, withTx, type Actor, type Handlers, type Queryable } from "@orch/kit";
import { ACTION, approvedOpen, frozenOpen } from "../approvals/content.js";
import type { TerminalApprovals } from "../approvals/gate.js";
import { checkPass } from "../approvals/pass-check.js";
import { passesDb } from "../db/passes.js";
import type { TerminalDeps } from "../deps.js";
import { requireOperator } from "./require-operator.js";

type PassHandlers = Pick<Handlers<typeof TerminalService>, "executeChangeRequest">;

/** The approved content is no longer what would open: the approval is refused, nothing is recorded. */
const planChanged = (why: string) =>
  precondition("plan_changed", `the change request's content changed since it was submitted: ${why}`);

/**
 * The executor of terminal.open (called by the auth service on the last approval, as the
 * requester): a terminal cannot be opened on someone's behalf, so the approval records a one-time
 * pass the requester opens the terminal with (POST /terminal/{node}?change_request_id=). The agent
 * must still be the one approved (plan_changed otherwise). Recorded once: a retry answers the same pass.
 */
export function passHandlers(deps: TerminalDeps, approvals: TerminalApprovals): PassHandlers {
  const { pool, clock } = deps;
  const ttlMs = deps.config.terminal.pass_ttl_seconds * 1000;
  return {
    async executeChangeRequest(req, ctx) {
      requireOperator(ctx);
      if (req.action !== ACTION)
        throw invalid("invalid_request", `the terminal service executes ${ACTION}, not '${req.action}'`, {
          field: "action",
        });
      const result = { result: `pass:${req.id}` };
      if (await passesDb.get(pool, req.id)) return result;
      const { nodeId, shell } = approvedOpen(req.content);
      const agent = nodeId ? await approvals.agentNow(ctx.actor, nodeId) : undefined;
      if (agent?.status !== "approved")
        throw planChanged(`agent ${nodeId || "(none)"} is gone, out of reach or no longer approved`);
      if (frozenOpen(agent, shell).hash !== req.contentHash) throw planChanged("the agent's name changed");
      const now = clock.now();
      await passesDb.insert(pool, {
        change_request_id: req.id,
        node_id: agent.nodeId,
        node_name: agent.name,
        shell,
        operator_id: ctx.actor.id,
        approvers: [...req.approvers],
        created_at: now,
        expires_at: now + ttlMs,
      });
      return result;
    },
  };
}

/**
 * Spends the caller's pass for this open and records the session in one transaction (the row lock
 * makes two opens with one pass decide one after the other). Answers the shell to open.
 */
export async function spendPass(
  deps: TerminalDeps,
  use: { changeRequestId: string; actor: Actor; nodeId: string; shell: string; sessionId: string },
  record: (db: Queryable, shell: string) => Promise<void>,
): Promise<string> {
  return withTx(deps.pool, async (db) => {
    const pass = await passesDb.lock(db, use.changeRequestId);
    const now = deps.clock.now();
    const refusal = checkPass(pass, { ...use, operatorId: use.actor.id, now });
    if (refusal?.code === "terminal_pass_used") throw precondition(refusal.code, refusal.message);
    if (refusal) throw forbidden(refusal.code, refusal.message);
    const shell = use.shell || pass!.shell;
    await passesDb.markUsed(db, use.changeRequestId, use.sessionId, now);
    await record(db, shell);
    return shell;
  });
}
