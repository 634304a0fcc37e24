import { SYSTEM_ACTOR, OrchError, type Actor } from "@orch/kit";
import { agentInfo } from "../convert.js";
import type { AgentInfo, Clients, StateDeps } from "../deps.js";
import { approvedAgents, matchAgents } from "../engine/fanout.js";
import type { CommandSpec } from "./validate.js";

/** A target as resolved at start: a launchable agent, or a name that can never run (batch 0). */
export type Resolved =
  | { kind: "agent"; agent: AgentInfo }
  | { kind: "skip"; nodeId: string; name: string; status: "not_approved" | "not_found" };

/**
 * The run's targets. A selector matches approved agents only; a node list reports every entry,
 * so an unknown or unapproved name is visible in the run. Both go through the agents service with
 * the caller's actor, so an operator's scope applies (an agent outside it is simply not found).
 */
export async function resolveTargets(clients: Clients, spec: CommandSpec, actor: Actor): Promise<Resolved[]> {
  if (spec.selector !== null)
    return matchAgents(spec.selector, await approvedAgents(clients, actor)).map((agent) => ({ kind: "agent", agent }));
  const out: Resolved[] = [];
  const seen = new Set<string>();
  const ids = spec.nodeIds ?? [];
  // A few lookups at a time: a 10 000-name list must not take 10 000 round trips in a row.
  for (let i = 0; i < ids.length; i += 50) {
    const part = await Promise.all(ids.slice(i, i + 50).map((id) => lookup(clients, id, actor)));
    for (const r of part) {
      const key = r.kind === "agent" ? r.agent.nodeId : r.nodeId;
      if (r.kind === "agent" && seen.has(key)) continue; // an id and a name of the same agent
      seen.add(key);
      out.push(r);
    }
  }
  return out;
}

async function lookup(clients: Clients, id: string, actor: Actor): Promise<Resolved> {
  try {
    const agent = agentInfo(await clients.agents.getAgent({ id }, { actor }));
    if (agent.status !== "approved")
      return { kind: "skip", nodeId: agent.nodeId, name: agent.name || id, status: "not_approved" };
    return { kind: "agent", agent };
  } catch (err) {
    if (OrchError.from(err).code === "NOT_FOUND") return { kind: "skip", nodeId: "", name: id, status: "not_found" };
    throw err;
  }
}

/** The active maintenance window's name, if any; runs are never blocked by one, and an unavailable notify service means none. */
export async function maintenanceWindow(deps: StateDeps, clients: Clients): Promise<string | null> {
  try {
    const m = await clients.notify.getMaintenanceStatus({}, { actor: SYSTEM_ACTOR });
    if (!m.active) return null;
    return m.window?.reason || m.window?.id || "maintenance";
  } catch (err) {
    deps.log.debug({ err: (err as Error).message }, "maintenance status unavailable; run recorded without a window");
    return null;
  }
}
