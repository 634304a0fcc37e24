import { sourceCatalogDb, assignmentsDb } from "../db/catalog.js";
import { sourcesDb, type SourceFileErrorRow } from "../db/sources.js";
import { approvedAgents, matchAgents } from "../engine/fanout.js";
import { withParameters } from "../engine/assignment-parameters.js";
import type { Engine } from "../engine/index.js";
import { loadSources } from "../engine/modules.js";
import { sourceActor } from "./actor.js";
import { applyDiff } from "./apply.js";
import { applyValueSets, diffValueSets } from "../values/source-sync.js";
import { diffTree, referencedModules } from "./diff.js";
import { outsideParameterErrors } from "./outside-parameters.js";
import { handOverPolicies } from "./policies-sync.js";
import { isRecordable, readSourceTree } from "./read.js";
import type { SourceBox } from "./seal.js";
import { initialSyncState, isDone, step, type SyncEffect, type SyncEvent, type Synced } from "./sync-machine.js";
import { failureRecord, syncedRecord, type SyncTrigger } from "./sync-records.js";
import { lockTreeBlobs } from "./tree-blobs.js";
import type { TreeAssignment } from "./tree-types.js";

/**
 * The driver of one sync attempt: the decisions are made by the state machine in sync-machine.ts
 * (and what is recorded by sync-records.ts); this performs their effects and feeds the results back.
 */

/** What an attempt works with: the engine's deps and clients, and the sealed-credentials box. */
export interface Context {
  engine: Engine;
  box: SourceBox | undefined;
}

/** The catalog refused the tree (an object owned elsewhere): rolls the apply's transaction back. */
class TreeRejected extends Error {
  constructor(readonly errors: SourceFileErrorRow[]) {
    super("tree rejected");
  }
}

/** Runs one effect; its result, if the attempt waits for one, is the next event. */
async function perform(cx: Context, e: SyncEffect): Promise<SyncEvent | undefined> {
  const { deps } = cx.engine;
  const { pool, log } = deps;
  switch (e.type) {
    case "load":
      return { type: "loaded", row: await sourcesDb.get(pool, e.name) };
    case "claim":
      await sourcesDb.claim(pool, e.name, e.lease);
      return { type: "claimed" };
    case "fetch":
      try {
        return { type: "fetched", read: await readSourceTree(deps, cx.box, e.row, e.row.branch) };
      } catch (err) {
        if (!isRecordable(err)) throw err;
        return { type: "fetch_failed", error: err };
      }
    case "apply":
      try {
        return { type: "applied", synced: await apply(cx, e) };
      } catch (err) {
        if (err instanceof TreeRejected) return { type: "rejected", errors: err.errors };
        throw err;
      }
    case "start_runs":
      await startRuns(cx, e.name, e.commit, e.due);
      return { type: "runs_started" };
    case "record_failure":
      return { type: "failure_recorded", retryInMs: await recordFailure(cx, e) };
    case "log":
      log[e.level](e.fields, e.message);
      return undefined;
  }
}

/** One attempt, under the source's lock: the machine's effects in order, their results fed back. */
export async function attemptSync(cx: Context, name: string, trigger: SyncTrigger): Promise<void> {
  const { config, clock } = cx.engine.deps;
  let state = initialSyncState(name, trigger, config.state.sources_git_timeout_ms);
  const pending: SyncEffect[] = [{ type: "load", name }];
  for (let effect = pending.shift(); effect; effect = pending.shift()) {
    const event = await perform(cx, effect);
    if (!event) continue;
    const t = step(state, event, clock.now());
    state = t.state;
    pending.push(...t.effects);
  }
  if (!isDone(state)) throw new Error(`source sync stopped in phase ${state.phase}`);
}

async function apply(cx: Context, e: Extract<SyncEffect, { type: "apply" }>): Promise<Synced | undefined> {
  const { events, clock } = cx.engine.deps;
  const { name, commit, tree } = e;
  return events.tx(async (db, emit) => {
    const locked = await sourcesDb.getForUpdate(db, name);
    if (!locked) return undefined;
    // Read under lock: an API upload or another source racing for a name loses to the check below.
    const names = [...tree.modules.map((m) => m.name), ...referencedModules(tree)];
    const assignmentNames = tree.assignments.map((a) => a.name);
    const diff = diffTree(
      name,
      tree,
      await sourceCatalogDb.modules(db, name, names, true),
      await sourceCatalogDb.assignments(db, name, assignmentNames, true),
    );
    const now = clock.now();
    const at = { source: name, commit, now, actor: sourceActor(name) };
    const values = await diffValueSets(db, at, tree.values ?? []);
    const outside = await outsideParameterErrors(db, cx.engine.cache, name, tree, diff);
    const gone = await lockTreeBlobs(db, [...diff.modules.created, ...diff.modules.updated]);
    const refused = [...diff.errors, ...outside, ...values.errors, ...gone];
    if (refused.length) throw new TreeRejected(refused);
    // Last: the auth service commits the policies on its own; a catalog refusal above must not follow it.
    const policies = await handOverPolicies(cx.engine, name, commit, tree.policies ?? []);
    if (policies.length) throw new TreeRejected(policies);
    const applied = await applyDiff(db, emit, { ...at, diff });
    await applyValueSets(db, emit, at, values);
    const record = syncedRecord(locked, applied, { commit, tree, lease: e.lease, now, trigger: e.trigger });
    await sourcesDb.recordSuccess(db, name, { commit, now, next_sync_at: record.next_sync_at });
    if (record.event) await emit(record.event);
    return { diff, previousCommit: locked.commit };
  });
}

/** Returns the delay before the retry (0 when the source is gone). */
async function recordFailure(cx: Context, e: Extract<SyncEffect, { type: "record_failure" }>): Promise<number> {
  const { events, clock } = cx.engine.deps;
  const { name, failure: f } = e;
  const now = clock.now();
  return events.tx(async (db, emit) => {
    const row = await sourcesDb.getForUpdate(db, name);
    if (!row) return 0;
    const record = failureRecord(row, f, { lease: e.lease, now, trigger: e.trigger });
    await sourcesDb.recordFailure(db, name, {
      attempted_commit: f.commit,
      now,
      next_sync_at: record.next_sync_at,
      error: f.error,
      errors: f.errors,
    });
    if (record.event) await emit(record.event);
    return record.retryInMs;
  });
}

async function startRuns(cx: Context, name: string, commit: string, due: readonly TreeAssignment[]): Promise<void> {
  const { clients, fanout, cache, deps } = cx.engine;
  const { pool, log } = deps;
  const actor = sourceActor(name);
  try {
    const agents = await approvedAgents(clients, actor);
    for (const t of due) {
      const row = await assignmentsDb.get(pool, t.name);
      if (!row || row.source !== name) continue;
      const { run } = await fanout.start({
        assignment: row,
        kind: "apply",
        batch: row.sync_batch,
        maxFailures: row.sync_max_failures,
        actor,
        sources: withParameters(await loadSources(pool, cache, row.modules), row.parameters),
        agents: matchAgents(row.selector, agents),
        origin: { source: name, commit },
      });
      log.info({ source: name, commit, assignment: row.name, run: run.id }, "apply on sync started");
    }
  } catch (err) {
    // The sync itself stands; the operator can still apply by hand.
    log.error({ err, source: name, commit }, "apply on sync could not start");
  }
}
