import {
  BLOB_SOURCE_TYPES,
  RESTARTABLE_TYPES,
  STATE_FEATURE_ARCHIVE,
  STATE_FEATURE_BLOBS,
  STATE_FEATURE_TRIGGERS,
  stateFeaturesOf,
} from "@orch/contracts";
import type { AgentInfo } from "../deps.js";
import type { RenderedResource } from "./render.js";

/** A resource only an agent with the `triggers` state feature runs as the module means. */
const needsTriggers = (r: RenderedResource) =>
  Boolean(r.onchanges?.length) ||
  Boolean(r.triggeredBy?.length) ||
  (RESTARTABLE_TYPES.has(r.type) && r.spec?.refresh !== undefined);

/** A file or archive from a blob: only an agent with a blob cache can write it (it would refuse `source`). */
const needsBlobs = (r: RenderedResource) => BLOB_SOURCE_TYPES.has(r.type) && r.spec?.source !== undefined;

/** An archive: an agent with a blob cache but no archive provider would fail it as an unknown type. */
const needsArchive = (r: RenderedResource) => r.type === "archive";

/**
 * Why these resources must not be sent to this agent, or undefined. An orch-agent from before
 * onchanges/notify/watch would ignore the new fields: it would run an onchanges exec on every apply
 * and never restart a service, and report success. Such an agent does not list `triggers` in its
 * `state_features` attribute, so the operation fails (`agent_too_old`) before anything is sent.
 * One without `blobs` has no blob cache to write a file's or an archive's `source:` from; one without
 * `archive` has no provider for archives.
 */
export function tooOldFor(
  resources: readonly RenderedResource[],
  agent: Pick<AgentInfo, "name" | "nodeId" | "attributes">,
): string | undefined {
  const features = stateFeaturesOf(agent.attributes);
  const version = agent.attributes.agent_version || "unknown";
  const who = `agent ${agent.name || agent.nodeId} runs orch-agent ${version}, which does not support`;
  const t = features.has(STATE_FEATURE_TRIGGERS) ? undefined : resources.find(needsTriggers);
  if (t)
    return `${who} onchanges, notify, watch or refresh (used by ${t.module}/${t.id}): upgrade it (orchctl agents upgrade) first`;
  const b = features.has(STATE_FEATURE_BLOBS) ? undefined : resources.find(needsBlobs);
  if (b) return `${who} ${b.type} sources (used by ${b.module}/${b.id}): upgrade it (orchctl agents upgrade) first`;
  const a = features.has(STATE_FEATURE_ARCHIVE) ? undefined : resources.find(needsArchive);
  if (a) return `${who} archive resources (used by ${a.module}/${a.id}): upgrade it (orchctl agents upgrade) first`;
  return undefined;
}
