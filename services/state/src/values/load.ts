import type { Queryable } from "@orch/kit";
import type { AgentInfo } from "../deps.js";
import type { ModuleSource } from "../engine/render.js";
import { agentValuesDb, valueSetsDb } from "./tables.js";
import { layersFor, mergeLayers, prepareSets } from "./merge.js";
import type { ValueMap } from "./parse.js";

/**
 * The render wiring: every agent of an operation or fan-out gets its merged values. Two queries
 * whatever the number of agents (every set once, the agents' own values in one), then a merge per
 * agent in memory: a 10,000-agent fan-out does not query per agent.
 */
export async function withValues(db: Queryable, agents: readonly AgentInfo[]): Promise<AgentInfo[]> {
  if (agents.length === 0) return [];
  const [sets, own] = await Promise.all([
    valueSetsDb.all(db),
    agentValuesDb.many(
      db,
      agents.map((a) => a.nodeId),
    ),
  ]);
  const prepared = prepareSets(sets);
  const ownBy = new Map(own.map((r) => [r.node_id, r]));
  // Agents without values of their own that match the same sets share one merged object: a fleet
  // has few combinations, and renders that cache by input see the same values.
  const shared = new Map<string, ValueMap>();
  return agents.map((a) => {
    const own = ownBy.get(a.nodeId);
    const layers = layersFor(prepared, a, own);
    if (own) return { ...a, values: mergeLayers(layers) };
    const key = layers.map((l) => l.set).join("\n");
    let values = shared.get(key);
    if (!values) shared.set(key, (values = mergeLayers(layers)));
    return { ...a, values };
  });
}

/** The agents with their values when a module renders with them (version 2); as they are otherwise. */
export async function valuesFor(
  db: Queryable,
  sources: readonly ModuleSource[],
  agents: AgentInfo[],
): Promise<AgentInfo[]> {
  return sources.some((s) => s.parsed.version === 2) ? withValues(db, agents) : agents;
}
