import type { AgentsService } from "@orch/contracts";
import { invalid, isScoped, notFound, type CachedReleaseCatalog, type CallContext, type Handlers } from "@orch/kit";
import { agentsDb } from "../db/agents.js";
import type { AgentsDeps } from "../deps.js";
import { agentRef } from "../link/presence.js";
import { toAgent } from "../convert.js";
import { checkTagKey, checkTagValue, checkTags, MAX_TAGS } from "../validate.js";
import { reachable, reachablePage, requireRef } from "./registry.js";

type TagHandlers = Pick<Handlers<typeof AgentsService>, "replaceTags" | "setTag" | "deleteTag" | "listTags">;

const sameTags = (a: Record<string, string>, b: Record<string, string>) => {
  const ka = Object.keys(a);
  return ka.length === Object.keys(b).length && ka.every((k) => Object.hasOwn(b, k) && b[k] === a[k]);
};

const sorted = (t: Record<string, string>) =>
  Object.fromEntries(Object.entries(t).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

export function tagHandlers(deps: AgentsDeps, releases: CachedReleaseCatalog): TagHandlers {
  const { pool, events } = deps;

  /** Applies `change` to the agent's tags under a row lock; emits agent.tags.updated when they differ. */
  async function update(
    ref: string,
    ctx: CallContext,
    change: (old: Record<string, string>) => Record<string, string>,
  ) {
    const row = await events.tx(async (db, emit) => {
      const cur = reachable(await agentsDb.byRef(db, requireRef(ref), true), ctx.actor, ref);
      const next = sorted(change(cur.tags));
      if (Object.keys(next).length > MAX_TAGS)
        throw invalid("too_many_tags", `an agent has at most ${MAX_TAGS} tags`, { field: "tags" });
      if (sameTags(cur.tags, next)) return cur;
      const updated = await agentsDb.setTags(db, cur.node_id, next);
      await emit({
        type: "agent.tags.updated",
        summary: `tags of agent ${cur.name || cur.node_id} changed by ${ctx.actor.name}`,
        actor: ctx.actor,
        target: agentRef(cur.node_id, cur.name),
        metadata: { old: cur.tags, new: next },
      });
      return updated;
    });
    return toAgent(row, (await releases.get()).latest);
  }

  return {
    async replaceTags(req, ctx) {
      checkTags(req.tags);
      return update(req.nodeId, ctx, () => ({ ...req.tags }));
    },
    async setTag(req, ctx) {
      checkTagKey(req.key);
      checkTagValue(req.value);
      return update(req.nodeId, ctx, (old) => ({ ...old, [req.key]: req.value }));
    },
    async deleteTag(req, ctx) {
      checkTagKey(req.key);
      return update(req.nodeId, ctx, (old) => {
        if (!Object.hasOwn(old, req.key))
          throw notFound("tag_not_found", `the agent has no tag '${req.key}'`, { field: "key" });
        const { [req.key]: _gone, ...rest } = old;
        return rest;
      });
    },
    async listTags(_req, ctx) {
      if (!isScoped(ctx.actor)) return { tags: await agentsDb.distinctTags(pool) };
      // Tags of agents outside the scope would reveal them; aggregate over the reachable ones only.
      const values = new Map<string, Set<string>>();
      for (const a of await reachablePage(pool, ctx.actor, Number.MAX_SAFE_INTEGER, "", "")) {
        for (const [k, v] of Object.entries(a.tags)) values.set(k, (values.get(k) ?? new Set()).add(v));
      }
      const keys = [...values.keys()].sort();
      return { tags: keys.map((key) => ({ key, values: [...values.get(key)!].sort() })) };
    },
  };
}
