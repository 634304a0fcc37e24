import { isScoped, notFound, OrchError, precondition, type Actor } from "@orch/kit";
import { agentInfo } from "../convert.js";
import type { AgentInfo, Clients } from "../deps.js";

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
  if (agent.status !== "approved")
    throw precondition("agent_not_approved", `agent ${agent.name || agent.nodeId} is ${agent.status}, not approved`, {
      node_id: agent.nodeId,
      agent_status: agent.status,
    });
  return agent;
}

/**
 * The node id for reading history: names resolve through the registry; an id the registry does
 * not know (a removed agent) or an unavailable registry still reads by the id given.
 */
export async function nodeIdForRead(clients: Clients, id: string, actor: Actor): Promise<string> {
  if (id === "") return "";
  // A scoped operator reads only what the registry says it may reach: no fallback to the raw id,
  // and an unavailable registry refuses rather than widens (docs/access.md).
  if (isScoped(actor)) {
    const missing = () => notFound("agent_not_found", `no agent '${id}'`, { node_id: id });
    return (await reachableAgent(clients, id, actor, missing)).nodeId;
  }
  try {
    return (await clients.agents.getAgent({ id }, { actor, timeoutMs: 2000 })).nodeId || id;
  } catch {
    return id;
  }
}

/**
 * The agent through the agents service, which applies the actor's scope: an agent outside it is
 * NOT_FOUND there and `missing()` here, so out-of-scope records look exactly like absent ones.
 */
export async function reachableAgent(
  clients: Clients,
  id: string,
  actor: Actor,
  missing: () => OrchError,
): Promise<AgentInfo> {
  try {
    return agentInfo(await clients.agents.getAgent({ id }, { actor, timeoutMs: 2000 }));
  } catch (err) {
    const e = OrchError.from(err);
    if (e.code === "NOT_FOUND") throw missing();
    throw e;
  }
}

/** For a scoped actor, checks that a record's node is reachable; unscoped actors pass untouched. */
export async function requireReachable(
  clients: Clients,
  nodeId: string,
  actor: Actor,
  missing: () => OrchError,
): Promise<void> {
  if (isScoped(actor)) await reachableAgent(clients, nodeId, actor, missing);
}

/** Node ids a scoped actor may reach (any status), or undefined for an unscoped actor. */
export async function reachableNodeIds(clients: Clients, actor: Actor): Promise<string[] | undefined> {
  if (!isScoped(actor)) return undefined;
  const out: string[] = [];
  let cursor = "";
  for (let page = 0; page < 10_000; page++) {
    const r = await clients.agents.listAgents({ limit: 500, cursor, status: "" }, { actor });
    out.push(...r.agents.map((a) => a.nodeId));
    if (!r.nextCursor || r.nextCursor === cursor) break;
    cursor = r.nextCursor;
  }
  return out;
}
