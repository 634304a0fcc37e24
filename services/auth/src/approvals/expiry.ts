// The periodic job that ends pending change requests past their expiry (`change_request.expired`).
import { schedulePeriodic, type Periodic } from "@orch/kit";
import type { ApprovalsContext } from "./context.js";
import { expire } from "./decide.js";
import { requestsDb } from "./requests-db.js";

/** Expires what is due now; returns how many requests it ended. */
export async function expireDue(c: ApprovalsContext): Promise<number> {
  const now = c.deps.clock.now();
  return c.deps.events.tx(async (db, emit) => {
    const due = await requestsDb.expiredPending(db, now);
    for (const r of due) await expire(db, emit, r, now);
    return due.length;
  });
}

export function startExpiry(c: ApprovalsContext): Periodic {
  const every = c.deps.config.auth.approvals_expiry_interval_seconds * 1000;
  return schedulePeriodic(c.deps, "auth.change_request_expiry", every, async () => {
    const n = await expireDue(c);
    if (n) c.deps.log.info({ expired: n }, "change requests expired");
  });
}
