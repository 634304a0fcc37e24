import { checkRestriction } from "@orch/contracts";
import { invalid } from "@orch/kit";

/** Who may receive a secret. Stored as JSON in this shape; null = any approved agent. */
export interface Restriction {
  node_ids: string[];
  tags: Record<string, string>;
}

/** The agent facts a decision needs (from AgentsService.GetAgent). */
export interface AgentFacts {
  nodeId: string;
  status: string;
  tags: Record<string, string>;
}

const bad = (field: string, message: string) => invalid("invalid_restriction", `${field} ${message}`, { field });

/**
 * Checks (with the rule in @orch/contracts, which the gateway applies too) and normalises a
 * restriction: lower-case, de-duplicated, sorted node ids.
 */
export function normaliseRestriction(r: {
  nodeIds: readonly string[];
  tags: Readonly<Record<string, string>>;
}): Restriction {
  const v = checkRestriction(r);
  if (v) throw bad(v.field, v.message);
  const tags: Record<string, string> = {};
  for (const k of Object.keys(r.tags).sort()) tags[k] = r.tags[k]!;
  return { node_ids: [...new Set(r.nodeIds.map((id) => id.toLowerCase()))].sort(), tags };
}

export type Decision = { ok: true } | { ok: false; reason: "agent_not_approved" | "secret_not_permitted" };

/**
 * The resolution rule (docs/secrets.md#restrictions): only approved agents; with a restriction, the agent's node id is
 * listed, or it carries every listed tag. An empty tag list grants nothing by itself.
 */
export function decide(restriction: Restriction | null, agent: AgentFacts): Decision {
  if (agent.status !== "approved") return { ok: false, reason: "agent_not_approved" };
  if (!restriction) return { ok: true };
  if (restriction.node_ids.includes(agent.nodeId)) return { ok: true };
  const wanted = Object.entries(restriction.tags);
  if (wanted.length > 0 && wanted.every(([k, v]) => Object.hasOwn(agent.tags, k) && agent.tags[k] === v))
    return { ok: true };
  return { ok: false, reason: "secret_not_permitted" };
}

/**
 * True when every agent `next` lets receive the secret is also let by `prev`: the change only
 * narrows (or keeps) who may receive it. Decided over the rule above for every possible agent:
 * - null (any approved agent) admits everyone, so only prev = null contains it;
 * - a listed node id of `next` must be listed in `prev`: that agent may carry no tags at all;
 * - `next`'s tag rule admits agents with any unlisted node id carrying (at least) its tags, so
 *   `prev` must have a tag rule whose every pair is among `next`'s.
 * Node ids are 128-bit, so an unlisted id always exists; status is the same for both sides.
 */
export function atMostAsPermissive(next: Restriction | null, prev: Restriction | null): boolean {
  if (prev === null) return true;
  if (next === null) return false;
  if (!next.node_ids.every((id) => prev.node_ids.includes(id))) return false;
  const nextTags = Object.entries(next.tags);
  if (nextTags.length === 0) return true;
  const prevTags = Object.entries(prev.tags);
  const has = (k: string, v: string) => Object.hasOwn(next.tags, k) && next.tags[k] === v;
  return prevTags.length > 0 && prevTags.every(([k, v]) => has(k, v));
}
