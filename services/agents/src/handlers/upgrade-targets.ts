import { checkAgentVersion, type Selector } from "@orch/contracts";
import { invalid, notFound, precondition, type Actor, type CachedReleaseCatalog, type Pool } from "@orch/kit";
import { agentsDb, type AgentRow } from "../db/agents.js";
import { reachable, reachablePage, requireRef } from "./registry.js";

const SCAN_BATCH = 500;

/** The published version asked for (empty = the latest), or the 4xx saying why there is none. */
export async function pickVersion(catalog: CachedReleaseCatalog, asked: string): Promise<string> {
  if (asked) {
    const v = checkAgentVersion(asked);
    if (v) throw invalid(v.reason, `version ${v.message}`, { field: "version" });
  }
  const cat = await catalog.get();
  if (!cat.latest)
    throw notFound("agent_packages_unavailable", "the server publishes no orch-agent packages (releases.dir is empty)");
  if (!asked) return cat.latest;
  if (!cat.versions.has(asked))
    throw notFound("agent_version_not_found", `orch-agent ${asked} is not published on this server`, {
      field: "version",
    });
  return asked;
}

/** The approved agents an upgrade request names: one by node id, or all the selector matches. */
export async function upgradeTargets(
  pool: Pool,
  nodeId: string,
  selector: Selector | null,
  actor: Actor,
): Promise<AgentRow[]> {
  if (nodeId) {
    const row = reachable(await agentsDb.byRef(pool, requireRef(nodeId)), actor, nodeId);
    if (row.status !== "approved")
      throw precondition("agent_not_approved", `agent ${row.name || row.node_id} is not approved`, {
        field: "node_id",
      });
    return [row];
  }
  const out: AgentRow[] = [];
  for (let after = ""; ; ) {
    const rows = await reachablePage(pool, actor, SCAN_BATCH, after, "approved", selector);
    out.push(...rows);
    if (rows.length < SCAN_BATCH) return out;
    after = rows.at(-1)!.node_id;
  }
}
