import type { JsonObject } from "@bufbuild/protobuf";
import { AgentsService, ApprovalService, type Agent } from "@orch/contracts";
import { askApproval, notFound, OrchError, rpcClient, type Actor } from "@orch/kit";
import type { TerminalDeps } from "../deps.js";
import { ACTION, frozenOpen } from "./content.js";

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

  return {
    agentNow,
    async check(actor, ask, known) {
      // The policies select on tags and attributes, which only the registry knows.
      const agent = known ?? (await agentNow(actor, ask.nodeId));
      if (!agent) throw notFound("agent_not_found", `no agent '${ask.nodeId}'`, { field: "node_id" });
      const verdict = await askApproval(
        { approvals, events: deps.events },
        {
          action: ACTION,
          agents: [agentRef(agent)],
          actor,
          reason: ask.reason,
          breakGlass: ask.breakGlass,
          target: { id: ask.nodeId, name: ask.nodeName, type: "agent" },
          doing: `opened a terminal on ${ask.nodeName || ask.nodeId}`,
        },
      );
      if (verdict.kind === "run") return { kind: "open" };
      const { reason } = verdict;
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
