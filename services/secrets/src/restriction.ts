import { NODE_ID_RE } from "@orch/contracts";
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

// Same rules as the agents service, so a restriction can only name ids and tags an agent can have.
const TAG_KEY_RE = /^[a-z0-9][a-z0-9._/-]{0,62}$/;
const TAG_VALUE_MAX = 255;
const MAX_NODE_IDS = 1000;
const MAX_TAGS = 100;

const bad = (field: string, message: string) => invalid("invalid_restriction", `${field} ${message}`, { field });

/**
 * Checks and normalises a restriction (lower-case, de-duplicated, sorted node ids). An empty
 * restriction is refused: "no restriction" is spelled null, so nobody widens access by accident.
 */
export function normaliseRestriction(r: {
  nodeIds: readonly string[];
  tags: Readonly<Record<string, string>>;
}): Restriction {
  if (r.nodeIds.length > MAX_NODE_IDS) throw bad("restriction.node_ids", `must list at most ${MAX_NODE_IDS} node ids`);
  const ids = new Set<string>();
  r.nodeIds.forEach((id, i) => {
    const v = id.toLowerCase();
    if (!NODE_ID_RE.test(v)) throw bad(`restriction.node_ids.${i}`, "must be a node id (32 hex characters)");
    ids.add(v);
  });
  const keys = Object.keys(r.tags);
  if (keys.length > MAX_TAGS) throw bad("restriction.tags", `must list at most ${MAX_TAGS} tags`);
  const tags: Record<string, string> = {};
  for (const k of keys.sort()) {
    if (!TAG_KEY_RE.test(k))
      throw bad(
        `restriction.tags.${k}`,
        "key must be 1-63 characters of a-z, 0-9, '.', '_', '/' and '-', starting with a letter or digit",
      );
    const v = r.tags[k]!;
    if ([...v].length > TAG_VALUE_MAX || !/^\P{C}*$/u.test(v))
      throw bad(`restriction.tags.${k}`, `value must be at most ${TAG_VALUE_MAX} printable characters`);
    tags[k] = v;
  }
  if (ids.size === 0 && keys.length === 0)
    throw bad("restriction", "must list at least one node id or tag (send null for no restriction)");
  return { node_ids: [...ids].sort(), tags };
}

export type Decision = { ok: true } | { ok: false; reason: "agent_not_approved" | "secret_not_permitted" };

/**
 * The resolution rule (DESIGN §8): only approved agents; with a restriction, the agent's node id is
 * listed, or it carries every listed tag. An empty tag list grants nothing by itself.
 */
export function decide(restriction: Restriction | null, agent: AgentFacts): Decision {
  if (agent.status !== "approved") return { ok: false, reason: "agent_not_approved" };
  if (!restriction) return { ok: true };
  if (restriction.node_ids.includes(agent.nodeId)) return { ok: true };
  const wanted = Object.entries(restriction.tags);
  if (
    wanted.length > 0 &&
    wanted.every(([k, v]) => Object.prototype.hasOwnProperty.call(agent.tags, k) && agent.tags[k] === v)
  )
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
  const has = (k: string, v: string) => Object.prototype.hasOwnProperty.call(next.tags, k) && next.tags[k] === v;
  return prevTags.length > 0 && prevTags.every(([k, v]) => has(k, v));
}
