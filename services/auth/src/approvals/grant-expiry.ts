// The periodic job that ends access grants at their expiry (`access.expired`) and tells the gateways,
// which re-check the holder's live terminals and streams against the narrower access at once.
// Until the job ends a grant, tokens already stop counting it (grantsDb.activeFor compares the time).
import { schedulePeriodic, type Periodic } from "@orch/kit";
import { publishRevocation } from "../sso/access.js";
import { endGrant } from "./access.js";
import type { ApprovalsContext } from "./context.js";
import { grantsDb } from "./grants-db.js";

/** Ends what is due now; returns the holders whose access narrowed. */
export async function endDueGrants(c: ApprovalsContext): Promise<string[]> {
  const now = c.deps.clock.now();
  const holders = await c.deps.events.tx(async (db, emit) => {
    const due = await grantsDb.due(db, now);
    for (const g of due) await endGrant(db, emit, g, { at: now, reason: "expired", by: undefined });
    return [...new Set(due.map((g) => g.operator_id))];
  });
  for (const id of holders) publishRevocation(c.deps.nc, id, true);
  return holders;
}

export function startGrantExpiry(c: ApprovalsContext): Periodic {
  return schedulePeriodic(
    c.deps,
    "auth.access_grant_expiry",
    c.deps.config.auth.access_expiry_interval_ms,
    async () => {
      const ended = await endDueGrants(c);
      if (ended.length) c.deps.log.info({ operators: ended.length }, "access grants expired");
    },
  );
}
