import type { Clock, Events, Logger } from "@orch/kit";
import { upgradesDb } from "../db/upgrades.js";
import { SERVER_REASONS, failUpgrade } from "./finish.js";

/** How often the deadline job runs (any replica; schedulePeriodic keeps it to one per period). */
export const DEADLINE_EVERY_MS = 5_000;
const BATCH = 200;

/** Fails every open upgrade past its deadline_at (reason timeout); returns how many. */
export async function expireUpgrades(deps: { events: Events; clock: Clock; log: Logger }): Promise<number> {
  let total = 0;
  for (let more = true; more; ) {
    const now = deps.clock.now();
    const batch = await deps.events.tx(async (db, emit) => {
      const rows = await upgradesDb.overdue(db, now, BATCH);
      let failed = 0;
      for (const row of rows) {
        const message = `no link-up on ${row.to_version} before the deadline; the agent keeps or returns to ${row.from_version}`;
        if (await failUpgrade(db, emit, row, { reason: SERVER_REASONS.timeout, message, at: now })) failed++;
      }
      return { failed, more: rows.length === BATCH };
    });
    total += batch.failed;
    more = batch.more;
  }
  if (total) deps.log.info({ failed: total }, "agent upgrades past their deadline reported failed");
  return total;
}
