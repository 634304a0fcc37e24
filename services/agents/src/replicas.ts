import { withJobLock, type Clock, type Events, type Logger, type Pool } from "@orch/kit";
import { agentsDb } from "./db/agents.js";
import { replicasDb } from "./db/replicas.js";
import { agentRef } from "./link/presence.js";

export interface ReplicaDeps {
  pool: Pool;
  events: Events;
  clock: Clock;
  log: Logger;
  replica: string;
  heartbeatMs: number;
  timeoutMs: number;
}

export interface TickerHooks {
  /** Called when our row had vanished (we were declared dead while alive, e.g. a long stall). */
  revived(): Promise<void>;
}

/**
 * Marks agents disconnected whose rows name a replica that stopped heartbeating (killed, OOM,
 * partitioned): nobody else would ever clear their `connected` flag. Runs on one replica at a time.
 */
export async function sweepOrphans(deps: ReplicaDeps): Promise<number> {
  let n = 0;
  await withJobLock(deps.pool, "agents.orphan_sweep", async () => {
    const now = deps.clock.now();
    const live = await replicasDb.pruneDead(deps.pool, now - deps.timeoutMs);
    n = await deps.events.tx(async (db, emit) => {
      const rows = await agentsDb.disconnectOrphans(db, live, now);
      for (const row of rows) {
        await emit({
          type: "agent.disconnected",
          severity: row.status === "approved" ? "warning" : "info",
          summary: `agent ${row.name || row.node_id} lost: the agents-service replica holding its link is gone`,
          actor: { id: "system", name: "system", type: "system" },
          target: agentRef(row.node_id, row.name),
          metadata: { reason: "replica_lost", status: row.status },
        });
      }
      return rows.length;
    });
    if (n) deps.log.warn({ agents: n }, "agents of a lost replica marked disconnected");
  });
  return n;
}

/** Heartbeats this replica's row and sweeps for dead ones on the same tick. */
export async function startReplicaTicker(deps: ReplicaDeps, hooks: TickerHooks): Promise<{ stop(): Promise<void> }> {
  await replicasDb.heartbeat(deps.pool, deps.replica, deps.clock.now());
  const tick = async () => {
    if (await replicasDb.heartbeat(deps.pool, deps.replica, deps.clock.now())) {
      deps.log.warn("this replica had been declared dead; re-asserting its links");
      await hooks.revived();
    }
    await sweepOrphans(deps);
  };
  const timer = setInterval(
    () => void tick().catch((err) => deps.log.warn({ err: (err as Error).message }, "replica heartbeat failed")),
    deps.heartbeatMs,
  );
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await replicasDb.remove(deps.pool, deps.replica).catch(() => undefined);
    },
  };
}
