import type { Actor } from "@orch/kit";
import { assignmentsDb } from "../db/catalog.js";
import type { OperationRow } from "../db/operations.js";
import { remediationsDb } from "../db/remediations.js";
import type { DriftRow } from "../db/snapshots.js";
import type { AgentInfo, Clients, StateDeps } from "../deps.js";
import { matchAgents } from "./fanout.js";
import { maintenanceActive } from "./maintenance.js";
import type { ModuleCache } from "./modules.js";
import type { Runner } from "./operation.js";
import { withParameters } from "./assignment-parameters.js";
import { snapshotSources } from "./snapshot-sources.js";
import { withReactors } from "../module/triggers.js";
import { valuesFor } from "../values/load.js";

/** Who enforcement applies as: a system actor, told apart from the scheduled drift checks (`system`). */
export const ENFORCE_ACTOR: Actor = { id: "system:enforce", name: "enforce", type: "system", role: "" };

/** What enforcement did for one assignment on the agent. */
export type Remediation =
  | { assignment: string; outcome: "applied"; operation: OperationRow | undefined }
  | { assignment: string; outcome: "rate_limited" | "maintenance" };

/**
 * After a scheduled drift check found `drift` on `agent`: for each enforced assignment whose selector
 * matches the agent and whose modules hold drifted resources, re-applies only those resources of the
 * snapshot's module versions (the versions the drift was measured against), one assignment after the
 * other. Skipped inside a maintenance window (asked again right before each apply: a window may have
 * opened since the check) and when the assignment was remediated on this agent within
 * `state.enforce_interval_seconds` — drift that an apply cannot fix must not turn into an apply loop.
 */
export async function enforce(
  deps: StateDeps,
  clients: Clients,
  runner: Runner,
  cache: ModuleCache,
  agent: AgentInfo,
  drift: DriftRow,
): Promise<Remediation[]> {
  const { pool, clock, log, config } = deps;
  if (!drift.drifted) return [];
  const driftedModules = [...new Set(drift.resources.map((r) => r.module))];
  const assignments = (await assignmentsDb.enforcedUsing(pool, driftedModules)).filter(
    (a) => matchAgents(a.selector, [agent]).length > 0,
  );
  if (assignments.length === 0) return [];

  const sources = await snapshotSources(deps, cache, agent.nodeId);
  const inSnapshot = new Set(sources.map((s) => s.name));
  const who = agent.name || agent.nodeId;
  const done: Remediation[] = [];
  // A resource drifted once is re-applied once, by the first assignment (by name) that holds its module.
  const handled = new Set<string>();
  for (const a of assignments) {
    const keys = drift.resources
      .filter((r) => a.modules.includes(r.module) && inSnapshot.has(r.module))
      .map((r) => `${r.module}/${r.id}`)
      .filter((k) => !handled.has(k));
    if (keys.length === 0) continue;
    const context = { assignment: a.name, node_id: agent.nodeId, drift_id: drift.id, resources: keys };
    if (await maintenanceActive(deps, clients)) {
      log.info(context, "drift detected, not corrected: maintenance window active");
      done.push({ assignment: a.name, outcome: "maintenance" });
      continue;
    }
    const claimed = await remediationsDb.claim(
      pool,
      a.name,
      agent.nodeId,
      clock.now(),
      config.state.enforce_interval_seconds * 1000,
    );
    if (!claimed) {
      log.info(context, "drift detected, not corrected: remediated within state.enforce_interval_seconds");
      done.push({ assignment: a.name, outcome: "rate_limited" });
      continue;
    }
    for (const k of keys) handled.add(k);
    const modules = new Set(keys.map((k) => k.slice(0, k.indexOf("/"))));
    log.info(context, `enforcing ${a.name} on ${who}`);
    // The snapshot's recorded inputs render first; the assignment's parameters are the fallback.
    const used = withParameters(
      sources.filter((s) => modules.has(s.name)),
      a.parameters,
    );
    const [valued] = await valuesFor(pool, used, [agent]);
    const { done: finished } = await runner.start({
      agent: valued!,
      kind: "apply",
      sources: used,
      actor: ENFORCE_ACTOR,
      assignment: a.name,
      remediates: drift.id,
      only: withReactors(used, keys),
    });
    done.push({ assignment: a.name, outcome: "applied", operation: await finished });
  }
  return done;
}
