import { toBinary } from "@bufbuild/protobuf";
import { AuditEventSchema } from "@orch/contracts";
import type { Actor, Emit, EventInput, Queryable, Ref } from "@orch/kit";
import { toRow } from "./convert.js";
import { eventsDb } from "./db/events.js";
import type { Stored } from "./feed.js";
import type { AuditDeps } from "./deps.js";

export const AUDIT_TARGET: Ref = { id: "audit", name: "audit log", type: "audit" };

/**
 * Emits one of the audit service's own events through the outbox (so it reaches the bus like any
 * other) and stores it in the same transaction, so it is visible as soon as the change commits.
 * The consumer later skips the bus copy by its id.
 */
export async function recordOwnEvent(db: Queryable, emit: Emit, input: EventInput): Promise<Stored[]> {
  const ev = await emit(input);
  const ins = await eventsDb.insert(db, [toRow(ev).row]);
  return ins.map((r) => ({ bytes: toBinary(AuditEventSchema, ev), seq: r.seq }));
}

export type Pruner = (
  cutoff: number,
  actor: Actor | Ref,
  trigger: "manual" | "retention",
  retentionDays?: number,
) => Promise<number>;

/**
 * Deletes events earlier than `cutoff` and records `audit.pruned` (who, cutoff, count) in the same
 * transaction. The ingest lock is taken first, so concurrent inserts wait instead of deadlocking
 * on a redelivered row being deleted.
 */
export function createPruner(deps: AuditDeps, onStored: (events: Stored[]) => void): Pruner {
  return async (cutoff, actor, trigger, retentionDays) => {
    const { deleted, own } = await deps.events.tx(async (db, emit) => {
      await eventsDb.lockIngest(db);
      const deleted = await eventsDb.deleteBefore(db, cutoff);
      if (deleted === 0 && trigger === "retention") return { deleted, own: [] };
      const when = new Date(cutoff).toISOString();
      const own = await recordOwnEvent(db, emit, {
        type: "audit.pruned",
        summary: `${actor.name} pruned ${deleted} audit event${deleted === 1 ? "" : "s"} before ${when}`,
        actor,
        target: AUDIT_TARGET,
        metadata: { cutoff: when, deleted, trigger, ...(retentionDays ? { retention_days: retentionDays } : {}) },
      });
      return { deleted, own };
    });
    onStored(own);
    deps.log.info({ deleted, cutoff: new Date(cutoff).toISOString(), trigger }, "audit events pruned");
    return deleted;
  };
}
