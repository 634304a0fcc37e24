import { precondition, SYSTEM_ACTOR } from "@orch/kit";
import { driftDb, snapshotsDb } from "../db/snapshots.js";
import { agentInfo } from "../convert.js";
import type { AgentInfo, Clients, StateDeps } from "../deps.js";
import { enforce } from "./enforce.js";
import { createLimiter } from "./limit.js";
import { maintenanceActive } from "./maintenance.js";
import type { ModuleCache } from "./modules.js";
import type { ModuleSource } from "./render.js";
import type { Runner } from "./operation.js";
import { snapshotSources } from "./snapshot-sources.js";

export async function requireSnapshot(deps: StateDeps, cache: ModuleCache, agent: AgentInfo): Promise<ModuleSource[]> {
  const sources = await snapshotSources(deps, cache, agent.nodeId);
  if (sources.length === 0)
    throw precondition(
      "no_snapshot",
      `agent ${agent.name || agent.nodeId} has no successful apply to check drift against`,
    );
  return sources;
}

/**
 * One scheduled pass: a drift check of every connected, approved agent with a snapshot, paused
 * while a maintenance window is active; drift found is corrected where an assignment enforces it
 * (engine/enforce.ts). The caller makes it run once per period across replicas (schedulePeriodic).
 * Returns the number of checks run, -1 when paused.
 */
export async function driftPass(
  deps: StateDeps,
  clients: Clients,
  runner: Runner,
  cache: ModuleCache,
): Promise<number> {
  if (await maintenanceActive(deps, clients)) {
    deps.log.info("scheduled drift checks paused: maintenance window active");
    return -1;
  }
  let checked = 0;
  const limiter = createLimiter(deps.config.state.drift_concurrency);
  const nodes = await snapshotsDb.nodes(deps.pool);
  await Promise.all(
    nodes.map((nodeId) =>
      limiter.run(async () => {
        let agent: AgentInfo;
        try {
          agent = agentInfo(await clients.agents.getAgent({ id: nodeId }, { actor: SYSTEM_ACTOR }));
        } catch (err) {
          deps.log.debug({ node_id: nodeId, err: (err as Error).message }, "drift check skipped: agent unknown");
          return;
        }
        if (agent.status !== "approved" || !agent.connected) return;
        const sources = await snapshotSources(deps, cache, nodeId);
        if (!sources.length) return;
        const { done } = await runner.start({ agent, kind: "drift", sources, actor: SYSTEM_ACTOR });
        const op = await done;
        checked++;
        // Only a scheduled check corrects: a manual one (handlers/drift.ts) reports.
        const rec = op && (await driftDb.byOperation(deps.pool, op.id));
        if (rec?.drifted)
          await enforce(deps, clients, runner, cache, agent, rec).catch((err: Error) =>
            deps.log.error({ err, node_id: nodeId, drift_id: rec.id }, "enforcement failed"),
          );
      }),
    ),
  );
  return checked;
}
