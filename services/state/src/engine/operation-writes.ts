import { groupCommit } from "@orch/kit";
import { operationsDb } from "../db/operations.js";
import { snapshotsDb, type SnapshotRow } from "../db/snapshots.js";
import type { StateDeps } from "../deps.js";

/** The runner's reads and writes that many operations of a fan-out make at once, each group in few statements. */
export interface OperationWrites {
  /** Pending → running; false when the operation is no longer pending. */
  markRunning(item: { id: string; now: number; deadline: number }): Promise<boolean>;
  /** The agent's snapshot rows. */
  snapshotOf(nodeId: string): Promise<SnapshotRow[]>;
}

export function createOperationWrites(deps: StateDeps): OperationWrites {
  const { pool, log } = deps;
  // A fan-out starts many operations at once: their pending → running goes in few statements.
  const markRunning = groupCommit<{ id: string; now: number; deadline: number }, boolean>({
    max: 1000,
    batch: async (items) => {
      const started = await operationsDb.markRunningMany(pool, items);
      return items.map((i) => started.has(i.id));
    },
    one: (i) => operationsDb.markRunning(pool, i.id, i.now, i.deadline),
    log,
    what: "operation starts",
  });

  // A fan-out's operations end together: their snapshot reads share one statement.
  const snapshotOf = groupCommit<string, SnapshotRow[]>({
    max: 500,
    async batch(nodeIds) {
      const byNode = new Map<string, SnapshotRow[]>();
      for (const row of await snapshotsDb.ofNodes(pool, nodeIds)) {
        const rows = byNode.get(row.node_id);
        if (rows) rows.push(row);
        else byNode.set(row.node_id, [row]);
      }
      return nodeIds.map((id) => byNode.get(id) ?? []);
    },
    one: (nodeId) => snapshotsDb.ofNode(pool, nodeId),
    log,
    what: "snapshot reads",
  });
  return { markRunning, snapshotOf };
}
