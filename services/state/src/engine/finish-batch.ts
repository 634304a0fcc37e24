import { groupCommit } from "@orch/kit";
import { operationsDb, type Finish, type OperationRow } from "../db/operations.js";
import { believedDb, driftDb, snapshotsDb, type DriftRow } from "../db/snapshots.js";
import type { StateDeps } from "../deps.js";
import { appliedState, driftClearedByApply, endEvent, finishOperation, type FinishContext } from "./finish.js";
import { recordOperationEnd } from "./metrics.js";

/** One operation end waiting for the next group commit. */
export interface EndRequest {
  op: Pick<OperationRow, "id" | "node_id" | "kind" | "remediates">;
  f: Finish;
  ctx: FinishContext;
}

/** Ends the batch can write: plain applies and plans (a drift check's or an enforcement apply's end reads what it replaces). */
export const batchable = (op: EndRequest["op"]) => (op.kind === "apply" || op.kind === "plan") && !op.remediates;

/**
 * finishOperation of many operations in ONE transaction with multi-row statements: the rows are
 * ended together (first writer wins per row), then every one that ended gets its state.* event,
 * a successful apply its snapshot and believed state, and drift confined to its modules is
 * recorded as cleared, as finishOperation does one at a time. Each node appears at most once (the
 * writer below defers a second end of the same node to the next batch). Returns each request's row,
 * or undefined for one that had already ended.
 */
export async function finishOperations(
  deps: StateDeps,
  reqs: readonly EndRequest[],
): Promise<Array<OperationRow | undefined>> {
  const { events, ids } = deps;
  const ended = await events.tx(async (db) => {
    const rows = await operationsDb.finishMany(
      db,
      reqs.map((r) => ({ id: r.op.id, f: r.f })),
    );
    const byId = new Map(rows.map((row) => [row.id, row]));
    const applies = reqs.flatMap((r) => {
      const row = byId.get(r.op.id);
      const c = r.ctx;
      return row?.kind === "apply" && row.status === "succeeded" && c.exec && c.sources && c.agent
        ? [{ row, state: appliedState(row, { exec: c.exec, sources: c.sources, agent: c.agent }) }]
        : [];
    });
    const prev = await driftDb.latestOf(
      db,
      applies.map((a) => a.row.node_id),
    );
    await snapshotsDb.upsertMany(
      db,
      applies.flatMap((a) => a.state.snapshots),
    );
    await believedDb.replaceModules(
      db,
      applies.flatMap((a) => a.state.modules),
      applies.flatMap((a) => a.state.believed),
    );
    const evs = rows.map(endEvent);
    const cleared: DriftRow[] = [];
    for (const a of applies) {
      const c = driftClearedByApply(a.row, prev.get(a.row.node_id), () => ids.next());
      if (!c) continue;
      cleared.push(c.rec);
      evs.push(c.event);
    }
    await driftDb.insertMany(db, cleared);
    await events.emitMany(db, evs);
    return byId;
  });
  // Counted after the commit: a rolled-back end did not happen.
  for (const row of ended.values()) recordOperationEnd(deps.metrics, row, false);
  return reqs.map((r) => ended.get(r.op.id));
}

/** Ends operations, those ending close together in one transaction. */
export interface EndWriter {
  end(req: EndRequest): Promise<OperationRow | undefined>;
}

/** Operation ends per transaction: a multi-row statement of this many stays well below Postgres' limits. */
const MAX_BATCH = 500;

/**
 * Group commit of operation ends: while one batch is being written the ends that arrive wait, then
 * go together in the next. A batch that fails is written again one operation at a time, so one bad
 * row cannot fail the others (and a database that is away fails each end, which its caller retries).
 */
export function createEndWriter(deps: StateDeps): EndWriter {
  const one = (r: EndRequest) => finishOperation(deps, r.op, r.f, r.ctx);
  const write = groupCommit<EndRequest, OperationRow | undefined>({
    max: MAX_BATCH,
    key: (r) => r.op.node_id,
    batch: (reqs) => finishOperations(deps, reqs),
    one,
    log: deps.log,
    what: "operation ends",
  });
  return {
    end: (req) => (batchable(req.op) ? write(req) : one(req)),
  };
}
