import type { Clock, Events, Logger } from "@orch/kit";
import { upgradesDb } from "../db/upgrades.js";
import type { Presence } from "../link/presence.js";
import { succeedUpgrade } from "./finish.js";

/**
 * Called when an agent links up: its open upgrade to the version it now runs has succeeded. An open
 * upgrade to another version stays open (the agent may not have restarted yet, or has rolled
 * back): the deadline job reports it.
 */
export async function completeUpgrades(
  deps: { events: Events; clock: Clock },
  up: { nodeId: string; version: string },
): Promise<number> {
  return deps.events.tx(async (db, emit) => {
    let n = 0;
    for (const row of await upgradesDb.openFor(db, up.nodeId)) {
      if (row.to_version !== up.version) continue;
      if (await succeedUpgrade(db, emit, row, deps.clock.now())) n++;
    }
    return n;
  });
}

/**
 * The presence with the completion hook on `connected` (wired in service.ts): a link-up on the
 * version an open upgrade asked for ends it succeeded. A failure here never fails the link.
 */
export function withUpgradeCompletion(
  presence: Presence,
  deps: { events: Events; clock: Clock; log: Logger },
): Presence {
  return {
    ...presence,
    async connected(up) {
      const row = await presence.connected(up);
      if (row)
        await completeUpgrades(deps, { nodeId: up.nodeId, version: up.version }).catch((err) =>
          deps.log.warn({ err, node_id: up.nodeId }, "could not complete the agent's upgrade"),
        );
      return row;
    },
  };
}
