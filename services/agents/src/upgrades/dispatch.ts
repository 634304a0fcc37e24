import type { Clock, Events, Logger, NatsConnection } from "@orch/kit";
import type { UpgradeRow } from "../db/upgrades.js";
import { failUpgrade } from "./finish.js";
import { requestUpgrade } from "./request.js";

/** Agents asked at once: each answer can take a download's time, and the bus must not be flooded. */
export const UPGRADE_CONCURRENCY = 16;

/**
 * Sends the Upgrade request for each row, at most UPGRADE_CONCURRENCY at a time. A refusal (or no
 * link, or no answer) ends the row failed with the reason; an acceptance leaves it requested until
 * the agent links up on the version (complete.ts) or the deadline passes (deadline.ts).
 */
export async function dispatchUpgrades(
  deps: { nc: NatsConnection; events: Events; clock: Clock; log: Logger },
  rows: UpgradeRow[],
  deadlineSeconds: number,
  timeoutMs?: number,
): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < rows.length) {
      const row = rows[next++]!;
      const answer = await requestUpgrade(
        deps.nc,
        { nodeId: row.node_id, upgradeId: row.id, version: row.to_version, deadlineSeconds },
        timeoutMs,
      );
      if (answer.accepted) {
        deps.log.info({ upgrade_id: row.id, node_id: row.node_id, version: row.to_version }, "agent accepted upgrade");
        continue;
      }
      try {
        const at = deps.clock.now();
        await deps.events.tx((db, emit) =>
          failUpgrade(db, emit, row, { reason: answer.reason, message: answer.message, at }),
        );
      } catch (err) {
        deps.log.warn({ err, upgrade_id: row.id }, "could not record a refused upgrade; the deadline job will");
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(UPGRADE_CONCURRENCY, rows.length) }, worker));
}
