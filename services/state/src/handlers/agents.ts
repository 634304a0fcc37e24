import { notFound, OrchError, precondition, type Actor } from "@orch/kit";
import { agentInfo, type AgentInfo, type Clients } from "../engine/deps.js";

/** The agent an operation targets: 404 agent_not_found, 409 agent_not_approved. */
export async function approvedAgent(clients: Clients, id: string, actor: Actor): Promise<AgentInfo> {
  let agent: AgentInfo;
  try {
    agent = agentInfo(await clients.agents.getAgent({ id }, { actor }));
  } catch (err) {
    const e = OrchError.from(err);
    if (e.code === "NOT_FOUND") throw notFound("agent_not_found", `no agent '${id}'`, { node_id: id });
    throw e;
  }
  if (agent.status !== "approved") throw precondition("agent_not_approved", `agent ${agent.name || agent.nodeId} is ${agent.status}, not approved`, { node_id: agent.nodeId, agent_status: agent.status });
  return agent;
}

/**
 * The node id for reading history: names resolve through the registry; an id the registry does
 * not know (a removed agent) or an unavailable registry still reads by the id given.
 */
export async function nodeIdForRead(clients: Clients, id: string, actor: Actor): Promise<string> {
  if (id === "") return "";
  try {
    return (await clients.agents.getAgent({ id }, { actor, timeoutMs: 2000 })).nodeId || id;
  } catch {
    return id;
  }
}
