import type { AgentsService } from "@orch/contracts";
import { keysetPage, pageCursor, pageLimit, type CachedReleaseCatalog, type Handlers } from "@orch/kit";
import { agentsDb, type AgentRow } from "../db/agents.js";
import { upgradesDb } from "../db/upgrades.js";
import type { AgentsDeps } from "../deps.js";
import { toAgentUpgrade } from "../upgrades/convert.js";
import { reachable, requireRef, visibleTo } from "./registry.js";
import { upgradeAgents, type UpgradeHandlerOptions } from "./upgrade-agents.js";

export { REPLY_WAIT_MS, type UpgradeHandlerOptions } from "./upgrade-agents.js";

type UpgradeHandlers = Pick<Handlers<typeof AgentsService>, "upgradeAgents" | "listAgentUpgrades">;

/** `catalog`: the published releases (the service's one cached read of releases.dir). */
export function upgradeHandlers(
  deps: AgentsDeps,
  catalog: CachedReleaseCatalog,
  opts: UpgradeHandlerOptions = {},
): UpgradeHandlers {
  return { upgradeAgents: upgradeAgents(deps, catalog, opts), listAgentUpgrades: listAgentUpgrades(deps) };
}

function listAgentUpgrades(deps: AgentsDeps): UpgradeHandlers["listAgentUpgrades"] {
  const { pool } = deps;
  return async (req, ctx) => {
    const limit = pageLimit(req.limit);
    const before = pageCursor(req.cursor, "ulid");
    let nodeId = "";
    if (req.nodeId)
      nodeId = reachable(await agentsDb.byRef(pool, requireRef(req.nodeId)), ctx.actor, req.nodeId).node_id;
    const rows = await upgradesDb.page(pool, { limit: limit + 1, before, nodeId });
    const { page, nextCursor } = keysetPage(rows, limit, (r) => r.id);
    // A scoped operator sees only upgrades of agents in its scope (the page may come back short).
    const keep = visibleTo(ctx.actor);
    if (!keep) return { upgrades: page.map(toAgentUpgrade), nextCursor };
    const agents = new Map<string, AgentRow | undefined>();
    for (const r of page) if (!agents.has(r.node_id)) agents.set(r.node_id, await agentsDb.byNodeId(pool, r.node_id));
    const visible = page.filter((r) => {
      const a = agents.get(r.node_id);
      return a !== undefined && keep(a);
    });
    return { upgrades: visible.map(toAgentUpgrade), nextCursor };
  };
}
