import { agree, count } from "@orch/contracts";
import type { Emit, EventInput, PoolClient } from "@orch/kit";
import { operationsDb, type Finish, type OperationRow } from "../db/operations.js";
import {
  believedDb,
  driftDb,
  snapshotsDb,
  type BelievedRow,
  type DriftRow,
  type SnapshotRow,
} from "../db/snapshots.js";
import type { AgentInfo, StateDeps } from "../deps.js";
import { statelessResources, usedInputs, type ModuleSource } from "./render.js";
import { recordOperationEnd } from "./metrics.js";
import { believedRows, driftedResources, type StoredExecution } from "./results.js";

/** What the end of an operation may need besides its row. */
export interface FinishContext {
  agent?: AgentInfo;
  sources?: readonly ModuleSource[];
  exec?: StoredExecution;
  /** Enforcement: the resources (`<module>/<id>`) the apply was limited to. */
  only?: ReadonlySet<string>;
}

/** `system`, or a system actor with a role in its id (`system:enforce`). */
const isSystem = (id: string) => id === "system" || id.startsWith("system:");
export const actorOf = (op: Pick<OperationRow, "actor_id" | "actor_name">) => ({
  id: op.actor_id,
  name: op.actor_name,
  type: isSystem(op.actor_id) ? "system" : "operator",
});
const targetOf = (op: Pick<OperationRow, "node_id" | "node_name">) => ({
  id: op.node_id,
  name: op.node_name || op.node_id,
  type: "agent",
});

function describe(row: OperationRow): string {
  const s = row.summary;
  const counts = [
    s.changed && `${s.changed} changed`,
    s.ok && `${s.ok} ok`,
    s.failed && `${s.failed} failed`,
    s.skipped && `${s.skipped} skipped`,
    s.unsupported && `${s.unsupported} unsupported`,
  ]
    .filter(Boolean)
    .join(", ");
  const why = row.error_code ? ` (${row.error_code})` : "";
  return `${row.kind} of ${row.modules.join(", ")} on ${row.node_name || row.node_id} ${row.status.replace("_", " ")}${why}${counts ? `: ${counts}` : ""}`;
}

/** The state.* event of an ended apply or plan (a drift check's events depend on what it found). */
export function endEvent(row: OperationRow): EventInput {
  const metadata = {
    operation_id: row.id,
    kind: row.kind,
    modules: row.modules,
    status: row.status,
    summary: { ...row.summary },
    ...(row.error_code ? { error_code: row.error_code } : {}),
    ...(row.assignment ? { assignment: row.assignment, run_id: row.run_id } : {}),
    ...(row.remediates ? { remediates: row.remediates } : {}),
    ...(row.change_request_id ? { change_request_id: row.change_request_id } : {}),
  };
  const type =
    row.kind === "apply"
      ? row.status === "succeeded"
        ? "state.apply.succeeded"
        : "state.apply.failed"
      : row.kind === "plan"
        ? "state.plan.completed"
        : undefined;
  if (!type) throw new Error(`no end event for a ${row.kind} operation`);
  return { type, summary: describe(row), actor: actorOf(row), target: targetOf(row), metadata };
}

/** What a successful full apply leaves behind: a snapshot and the believed state of each module. */
export function appliedState(row: OperationRow, c: Required<Pick<FinishContext, "agent" | "sources" | "exec">>) {
  const at = row.finished_at!;
  const snapshots: SnapshotRow[] = [];
  const modules: Array<{ node_id: string; module: string }> = [];
  const believed: BelievedRow[] = [];
  for (const [position, s] of c.sources.entries()) {
    const inputs = usedInputs(s, c.agent.attributes, c.agent.tags, c.agent);
    snapshots.push({
      node_id: row.node_id,
      module: s.name,
      module_sha256: s.sha256,
      position,
      attributes: inputs.attributes,
      tags: inputs.tags,
      used_values: inputs.values ?? null,
      parameters: inputs.parameters ?? null,
      operation_id: row.id,
      applied_at: at,
    });
    modules.push({ node_id: row.node_id, module: s.name });
    believed.push(...believedRows(row.node_id, row.id, at, s.name, c.exec));
  }
  return { snapshots, modules, believed };
}

/**
 * A full apply re-enforced its modules: recorded drift confined to them is now gone. The record
 * saying so and its drift.cleared event, or undefined when `prev` (the node's latest) stays.
 */
export function driftClearedByApply(
  row: OperationRow,
  prev: DriftRow | undefined,
  nextId: () => string,
): { rec: DriftRow; event: EventInput } | undefined {
  if (!prev?.drifted || !prev.resources.every((r) => row.modules.includes(r.module))) return undefined;
  const rec: DriftRow = {
    id: nextId(),
    node_id: row.node_id,
    operation_id: row.id,
    checked_at: row.finished_at!,
    drifted: false,
    resources: [],
  };
  return {
    rec,
    event: {
      type: "drift.cleared",
      summary: `drift on ${row.node_name || row.node_id} cleared by apply ${row.id}`,
      actor: actorOf(row),
      target: targetOf(row),
      metadata: { drift_id: rec.id, operation_id: row.id, previous_drift_id: prev.id },
    },
  };
}

const sameSet = (a: string[], b: string[]) => a.length === b.length && a.every((x) => b.includes(x));
const keys = (d: Pick<DriftRow, "resources">) => d.resources.map((r) => `${r.module}/${r.id}`).sort();

/**
 * Ends an operation and records its consequences in one transaction with their audit events:
 * the state.* event, and for a successful apply the snapshot, believed state and (when it fixes
 * recorded drift) drift.cleared; for a drift check the drift record and drift.detected/cleared.
 * Returns undefined when the operation had already ended (first writer wins).
 */
export async function finishOperation(
  deps: StateDeps,
  op: Pick<OperationRow, "id">,
  f: Finish,
  ctx: FinishContext = {},
): Promise<OperationRow | undefined> {
  const { events, ids } = deps;
  const nextId = () => ids.next();
  let drifted = false;
  const ended = await events.tx(async (db, emit) => {
    const row = await operationsDb.finish(db, op.id, f);
    if (!row) return undefined;
    if (row.kind === "apply") {
      await emit(endEvent(row));
      if (row.remediates) await recordRemediation(db, emit, row, ctx, nextId);
      else if (row.status === "succeeded" && ctx.exec && ctx.sources && ctx.agent)
        await recordApply(db, emit, row, ctx as Required<FinishContext>, nextId);
    } else if (row.kind === "plan") {
      await emit(endEvent(row));
    } else if (ctx.exec) {
      drifted = await recordDrift(db, emit, row, ctx.exec, statelessResources(ctx.sources ?? []), nextId);
    }
    return row;
  });
  // Counted after the commit: a rolled-back end did not happen.
  if (ended) recordOperationEnd(deps.metrics, ended, drifted);
  return ended;
}

/** A successful full apply: its snapshot and believed state, and drift.cleared when it fixes the recorded drift. */
async function recordApply(
  db: PoolClient,
  emit: Emit,
  row: OperationRow,
  c: Required<FinishContext>,
  nextId: () => string,
) {
  const applied = appliedState(row, c);
  await snapshotsDb.upsertMany(db, applied.snapshots);
  await believedDb.replaceModules(db, applied.modules, applied.believed);
  const cleared = driftClearedByApply(row, await driftDb.latest(db, row.node_id), nextId);
  if (cleared) {
    await driftDb.insert(db, cleared.rec);
    await emit(cleared.event);
  }
}

/**
 * An enforcement apply of some drifted resources: the snapshot stays (it describes the full module
 * versions); the believed state of the re-applied resources is refreshed, the drift they were is
 * recorded as gone, and drift.remediated or drift.remediation_failed says what enforcement did.
 */
async function recordRemediation(
  db: PoolClient,
  emit: Emit,
  row: OperationRow,
  ctx: FinishContext,
  nextId: () => string,
) {
  const driftId = row.remediates!;
  const record = await driftDb.get(db, driftId);
  const applied = ctx.only
    ? [...ctx.only].sort()
    : (record ? keys(record) : []).filter((k) => row.modules.includes(k.slice(0, k.indexOf("/"))));
  const succeeded = row.status === "succeeded" && ctx.exec !== undefined;
  if (succeeded) {
    const at = row.finished_at!;
    const fixed = new Set(applied);
    const rows = row.modules.flatMap((m) => believedRows(row.node_id, row.id, at, m, ctx.exec!));
    await believedDb.replaceResources(
      db,
      row.node_id,
      rows.filter((b) => fixed.has(`${b.module}/${b.resource_id}`)),
    );
    const prev = await driftDb.latest(db, row.node_id);
    if (prev?.drifted) {
      const remaining = prev.resources.filter((r) => !fixed.has(`${r.module}/${r.id}`));
      if (remaining.length < prev.resources.length) {
        const rec: DriftRow = {
          id: nextId(),
          node_id: row.node_id,
          operation_id: row.id,
          checked_at: at,
          drifted: remaining.length > 0,
          resources: remaining,
        };
        await driftDb.insert(db, rec);
        if (!rec.drifted)
          await emit({
            type: "drift.cleared",
            summary: `drift on ${row.node_name || row.node_id} cleared by the enforcement of ${row.assignment}`,
            actor: actorOf(row),
            target: targetOf(row),
            metadata: { drift_id: rec.id, operation_id: row.id, previous_drift_id: prev.id },
          });
      }
    }
  }
  const what = `${applied.length} drifted resource${applied.length === 1 ? "" : "s"} (${applied.slice(0, 5).join(", ")}${applied.length > 5 ? ", …" : ""})`;
  await emit({
    type: succeeded ? "drift.remediated" : "drift.remediation_failed",
    summary: succeeded
      ? `enforcement of ${row.assignment} re-applied ${what} on ${row.node_name || row.node_id}`
      : `enforcement of ${row.assignment} could not re-apply ${what} on ${row.node_name || row.node_id}: ${row.status.replace("_", " ")}${row.error_code ? ` (${row.error_code})` : ""}`,
    actor: actorOf(row),
    target: targetOf(row),
    metadata: {
      drift_id: driftId,
      operation_id: row.id,
      assignment: row.assignment,
      node_id: row.node_id,
      resources: applied,
      ...(succeeded ? {} : { status: row.status, ...(row.error_code ? { error_code: row.error_code } : {}) }),
    },
  });
}

async function recordDrift(
  db: PoolClient,
  emit: Emit,
  row: OperationRow,
  exec: StoredExecution,
  stateless: ReadonlySet<string>,
  nextId: () => string,
): Promise<boolean> {
  const resources = driftedResources(exec.results, stateless);
  const rec: DriftRow = {
    id: nextId(),
    node_id: row.node_id,
    operation_id: row.id,
    checked_at: row.finished_at!,
    drifted: resources.length > 0,
    resources,
  };
  const prev = await driftDb.latest(db, row.node_id);
  await driftDb.insert(db, rec);
  const who = row.node_name || row.node_id;
  if (rec.drifted && (!prev?.drifted || !sameSet(keys(prev), keys(rec)))) {
    await emit({
      type: "drift.detected",
      summary: `drift on ${who}: ${count(resources.length, "resource")} no longer ${agree(resources.length, "matches", "match")} (${keys(rec).slice(0, 5).join(", ")}${resources.length > 5 ? ", …" : ""})`,
      actor: actorOf(row),
      target: targetOf(row),
      metadata: { drift_id: rec.id, operation_id: row.id, resources: keys(rec) },
    });
  } else if (!rec.drifted && prev?.drifted) {
    await emit({
      type: "drift.cleared",
      summary: `drift on ${who} cleared`,
      actor: actorOf(row),
      target: targetOf(row),
      metadata: { drift_id: rec.id, operation_id: row.id, previous_drift_id: prev.id },
    });
  }
  return rec.drifted;
}
