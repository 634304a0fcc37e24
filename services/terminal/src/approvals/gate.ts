import type { JsonObject } from "@bufbuild/protobuf";
import { AgentsService, ApprovalService, type Agent } from "@orch/contracts";
import { OrchError, forbidden, invalid, notFound, rpcClient, type Actor } from "@orch/kit";
import type { TerminalDeps } from "../deps.js";
import { ACTION, frozenOpen } from "./content.js";

const MAX_REASON = 500;

/** `open`: no policy holds it (or an admin broke glass, recorded); `held`: a change request waits. */
export type OpenVerdict = { kind: "open" } | { kind: "held"; changeRequestId: string; summary: string };

export interface OpenAsk {
  nodeId: string;
  nodeName: string;
  shell: string;
  reason: string;
  breakGlass: boolean;
}

/**
 * Four-eyes approval of terminal opens (docs/approvals.md), asked where the PTY is opened. A port,
 * so the service's own tests (which run no auth service) can stand in for it.
 */
export interface TerminalApprovals {
  /** Asks the policies about opening on this agent (`known`: the registry's agent when already looked up). */
  check(actor: Actor, ask: OpenAsk, known?: Agent): Promise<OpenVerdict>;
  /** The agent as `actor` sees it now; undefined when gone or out of their scope. */
  agentNow(actor: Actor, nodeId: string): Promise<Agent | undefined>;
}

const agentRef = (a: Agent) => ({ id: a.nodeId, name: a.name, attributes: a.attributes, tags: a.tags });

function checkReason(reason: string): string {
  const r = reason.trim();
  if (r.length > MAX_REASON)
    throw invalid("invalid_request", `reason is longer than ${MAX_REASON} characters`, { field: "reason" });
  return r;
}

export function terminalApprovals(deps: TerminalDeps): TerminalApprovals {
  const timeoutMs = deps.config.nats.request_timeout_ms;
  const agents = rpcClient(deps.nc, "agents", AgentsService, { timeoutMs });
  const approvals = rpcClient(deps.nc, "auth", ApprovalService, { timeoutMs });

  async function agentNow(actor: Actor, nodeId: string): Promise<Agent | undefined> {
    try {
      return await agents.getAgent({ id: nodeId }, { actor });
    } catch (err) {
      if (OrchError.from(err).code === "NOT_FOUND") return undefined;
      throw err;
    }
  }

  /** An admin opening without the approval a policy asks for: allowed with a reason, recorded as critical. */
  async function bypass(
    actor: Actor,
    ask: OpenAsk,
    reason: string,
    verdict: { policy: string; approverIds: string[] },
  ) {
    if (actor.role !== "admin")
      throw forbidden("break_glass_forbidden", "only an admin may act without the approval a policy asks for");
    if (!reason)
      throw invalid("break_glass_reason_required", "a break-glass terminal needs a reason", { field: "reason" });
    const label = ask.nodeName || ask.nodeId;
    await deps.events.tx(async (_db, emit) => {
      await emit({
        type: "approval.bypassed",
        summary: `${actor.name} opened a terminal on ${label} without approval (policy ${verdict.policy}): ${reason}`,
        actor,
        target: { id: ask.nodeId, name: ask.nodeName, type: "agent" },
        metadata: {
          action: ACTION,
          policy: verdict.policy,
          reason,
          agents: 1,
          notify_operator_ids: verdict.approverIds,
        },
      });
    });
  }

  return {
    agentNow,
    async check(actor, ask, known) {
      const reason = checkReason(ask.reason);
      // The policies select on tags and attributes, which only the registry knows.
      const agent = known ?? (await agentNow(actor, ask.nodeId));
      if (!agent) throw notFound("agent_not_found", `no agent '${ask.nodeId}'`, { field: "node_id" });
      const verdict = await approvals.evaluateApproval({ action: ACTION, agents: [agentRef(agent)] }, { actor });
      if (!verdict.required) return { kind: "open" };
      if (ask.breakGlass) {
        await bypass(actor, ask, reason, verdict);
        return { kind: "open" };
      }
      const frozen = frozenOpen(agent, ask.shell);
      const summary = `open a terminal on ${agent.name || agent.nodeId}`;
      const cr = await approvals.submitChangeRequest(
        {
          action: ACTION,
          targetType: "agent",
          targetName: agent.name || agent.nodeId,
          summary,
          reason,
          content: frozen.content as unknown as JsonObject,
          contentHash: frozen.hash,
          agents: [agentRef(agent)],
        },
        { actor },
      );
      return { kind: "held", changeRequestId: cr.id, summary };
    },
  };
}
