import { RESTARTABLE_TYPES, STATE_FEATURE_TRIGGERS, stateFeaturesOf } from "@orch/contracts";
import type { AgentInfo } from "../deps.js";
import type { RenderedResource } from "./render.js";

/** A resource only an agent with the `triggers` state feature runs as the module means. */
const needsTriggers = (r: RenderedResource) =>
  Boolean(r.onchanges?.length) ||
  Boolean(r.triggeredBy?.length) ||
  (RESTARTABLE_TYPES.has(r.type) && r.spec?.refresh !== undefined);

/**
 * Why these resources must not be sent to this agent, or undefined. An orch-agent from before
 * onchanges/notify/watch would ignore the new fields: it would run an onchanges exec on every apply
 * and never restart a service, and report success. Such an agent does not list `triggers` in its
 * `state_features` attribute, so the operation fails (`agent_too_old`) before anything is sent.
 */
export function tooOldFor(
  resources: readonly RenderedResource[],
  agent: Pick<AgentInfo, "name" | "nodeId" | "attributes">,
): string | undefined {
  const r = resources.find(needsTriggers);
  if (!r || stateFeaturesOf(agent.attributes).has(STATE_FEATURE_TRIGGERS)) return undefined;
  const version = agent.attributes.agent_version || "unknown";
  return `agent ${agent.name || agent.nodeId} runs orch-agent ${version}, which does not support onchanges, notify, watch or refresh (used by ${r.module}/${r.id}): upgrade it (orchctl agents upgrade) first`;
}
