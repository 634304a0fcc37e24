import { createHash } from "node:crypto";
import { canonicalJson } from "@orch/contracts";
import type { AssignmentRow } from "../db/catalog.js";
import type { AgentInfo } from "../deps.js";
import type { ModuleSource } from "../engine/render.js";

export { canonicalJson };

const sha256 = (text: string) => createHash("sha256").update(text).digest("hex");

/** What an assignment apply would do, frozen for its change request, and the hash its approval binds to. */
export interface FrozenApply {
  content: {
    assignment: string;
    selector: string;
    modules: { name: string; sha256: string }[];
    parameters: Record<string, unknown>;
    batch: string;
    max_failures: number | null;
    /** In node id order; `values_sha256` fingerprints the agent's merged values ("" when none render). */
    targets: { node_id: string; name: string; values_sha256: string }[];
  };
  hash: string;
}

/**
 * The inputs that decide what an apply changes: module versions, parameters, per-agent values and
 * the targets (plus how it rolls out). Any of them changing before execution changes the hash, so
 * an approval given for one content never executes another.
 */
export function frozenApply(
  assignment: AssignmentRow,
  sources: readonly ModuleSource[],
  agents: readonly AgentInfo[],
  rollout: { batch: string; maxFailures: number | null },
): FrozenApply {
  const targets = [...agents]
    .sort((a, b) => (a.nodeId < b.nodeId ? -1 : a.nodeId > b.nodeId ? 1 : 0))
    .map((a) => ({ node_id: a.nodeId, name: a.name, values_sha256: a.values ? sha256(canonicalJson(a.values)) : "" }));
  const content = {
    assignment: assignment.name,
    selector: assignment.selector,
    modules: sources.map((s) => ({ name: s.name, sha256: s.sha256 })),
    parameters: assignment.parameters,
    batch: rollout.batch,
    max_failures: rollout.maxFailures,
    targets,
  };
  return { content, hash: sha256(canonicalJson(content)) };
}

/** What an agent apply would do, frozen for its change request, and the hash its approval binds to. */
export interface FrozenAgentApply {
  content: {
    node_id: string;
    name: string;
    modules: { name: string; sha256: string }[];
    /** The agent's merged values' fingerprint ("" when none render). */
    values_sha256: string;
  };
  hash: string;
}

/** The inputs that decide what an agent apply changes: the agent, its module versions and values. */
export function frozenAgentApply(agent: AgentInfo, sources: readonly ModuleSource[]): FrozenAgentApply {
  const content = {
    node_id: agent.nodeId,
    name: agent.name,
    modules: sources.map((s) => ({ name: s.name, sha256: s.sha256 })),
    values_sha256: agent.values ? sha256(canonicalJson(agent.values)) : "",
  };
  return { content, hash: sha256(canonicalJson(content)) };
}
