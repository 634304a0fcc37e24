import type { MessageInitShape } from "@bufbuild/protobuf";
import { sourceActorId, type SourcePlanSchema } from "@orch/contracts";
import { backoff, notFound, withJobLock, type Actor, type Ref } from "@orch/kit";
import { assignmentsDb, sourceCatalogDb } from "../db/catalog.js";
import { sourcesDb, type SourceFileErrorRow } from "../db/sources.js";
import { approvedAgents, matchAgents } from "../engine/fanout.js";
import type { Engine } from "../engine/index.js";
import { loadSources } from "../engine/modules.js";
import { applyDiff, short } from "./apply.js";
import { diffTree, referencedModules, touched, type TreeDiff } from "./diff.js";
import { GitError } from "./git.js";
import { planSource } from "./plan.js";
import { isRecordable, readSourceTree, type ReadTree } from "./read.js";
import type { SourceBox } from "./seal.js";

export type SyncTrigger = { kind: "created" | "schedule" | "manual" | "webhook"; actor: Actor };

export interface SourceSync {
  /**
   * Syncs now under the source's advisory lock; when another replica or call holds it, makes the
   * source due and returns {queued: true}. Fetch and validation failures are recorded on the row
   * (never thrown); throws source_not_found.
   */
  sync(name: string, trigger: SyncTrigger): Promise<{ queued: boolean }>;
  /** Every due source (next_sync_at <= now), one after the other; returns how many ran. */
  syncDue(): Promise<number>;
  plan(name: string, ref: string, waitMs: number, actor: Actor): Promise<MessageInitShape<typeof SourcePlanSchema>>;
  /**
   * Resolves when the syncs under way in this process have ended (scheduled, manual, or started
   * by a webhook without waiting): a stop that cut one off would leave its claim keeping the
   * source from syncing until the claim's lease ran out.
   */
  drain(): Promise<void>;
}

/** Who a source's syncs act as, in events and in the runs apply_on_sync starts. */
export const sourceActor = (name: string): Actor => ({
  id: sourceActorId(name),
  name: `source ${name}`,
  type: "system",
  role: "",
});

/** A failing source is retried after 5 s, 10 s, 20 s, … but never later than its own interval. */
const RETRY_INITIAL_MS = 5_000;
/** Per-file errors carried by a source.sync_failed event (the row holds them all). */
const MAX_EVENT_ERRORS = 20;

/** The catalog refused the tree (an object owned elsewhere): rolls the apply's transaction back. */
class TreeRejected extends Error {
  constructor(readonly errors: SourceFileErrorRow[]) {
    super("tree rejected");
  }
}

interface Failure {
  commit: string;
  reason: string;
  error: string;
  errors: SourceFileErrorRow[];
}

const treeFailure = (commit: string, errors: SourceFileErrorRow[]): Failure => {
  const first = errors[0]!;
  const where = `${first.file || "(tree)"}${first.line ? `:${first.line}` : ""}`;
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : "";
  return {
    commit,
    reason: "invalid_tree",
    error: `${where}: ${first.message}${more}`,
    errors,
  };
};

const sourceRef = (name: string): Ref => ({ id: name, name, type: "source" });
const triggerMeta = (t: SyncTrigger) => ({ kind: t.kind, actor_id: t.actor.id, actor_name: t.actor.name });

export function createSourceSync(engine: Engine, box: SourceBox | undefined): SourceSync {
  const { deps, clients, fanout, cache } = engine;
  const { pool, events, clock, log, config } = deps;

  /** Records a failed attempt: nothing in the catalog changed; the commit in force stays. */
  async function fail(name: string, trigger: SyncTrigger, lease: number, f: Failure): Promise<void> {
    const now = clock.now();
    let delay = 0;
    await events.tx(async (db, emit) => {
      const row = await sourcesDb.getForUpdate(db, name);
      if (!row) return;
      delay = backoff({ initialMs: RETRY_INITIAL_MS, maxMs: row.interval_s * 1000 })(row.failures);
      // A request that came in during this attempt (makeDue) is kept: it may carry the fix.
      const next = Math.min(now + delay, row.next_sync_at < lease ? row.next_sync_at : Number.POSITIVE_INFINITY);
      await sourcesDb.recordFailure(db, name, {
        attempted_commit: f.commit,
        now,
        next_sync_at: next,
        error: f.error,
        errors: f.errors,
      });
      // A source failing the same way on every retry reports it once.
      if (row.status === "error" && row.attempted_commit === f.commit && row.error === f.error) return;
      const first = f.errors[0];
      await emit({
        type: "source.sync_failed",
        summary: `sync of source ${name}${f.commit ? ` @ ${short(f.commit)}` : ""} failed: ${f.error}`,
        actor: sourceActor(name),
        target: sourceRef(name),
        metadata: {
          commit: f.commit,
          current_commit: row.commit,
          reason: f.reason,
          message: f.error,
          file: first?.file ?? "",
          line: first?.line ?? 0,
          errors: f.errors.slice(0, MAX_EVENT_ERRORS),
          error_count: f.errors.length,
          next_attempt_at: next,
          trigger: triggerMeta(trigger),
        },
      });
    });
    log.warn(
      { source: name, commit: f.commit, reason: f.reason, retry_in_ms: delay, trigger: trigger.kind },
      `source sync failed: ${f.error}`,
    );
  }

  /** One attempt, under the source's lock. */
  async function attempt(name: string, trigger: SyncTrigger): Promise<void> {
    const row = await sourcesDb.get(pool, name);
    if (!row) return; // deleted meanwhile
    const started = clock.now();
    const lease = started + row.interval_s * 1000 + 2 * config.state.sources_git_timeout_ms;
    // Before the fetch: a request queued until now is served by this fetch; one queued later
    // (makeDue pulls next_sync_at below the lease) is seen at the end and keeps the source due.
    await sourcesDb.claim(pool, name, lease);

    let read: ReadTree;
    try {
      read = await readSourceTree(deps, box, row, row.branch);
    } catch (err) {
      if (!isRecordable(err)) throw err;
      const git = err instanceof GitError;
      return fail(name, trigger, lease, {
        commit: "",
        reason: git ? err.failure : err.reason,
        error: git ? `fetch of branch '${row.branch}' failed (${err.failure}): ${err.message}` : err.message,
        errors: [],
      });
    }
    const { commit, tree } = read;
    if (tree.errors.length) return fail(name, trigger, lease, treeFailure(commit, tree.errors));

    const actor = sourceActor(name);
    let diff: TreeDiff | undefined;
    try {
      diff = await events.tx(async (db, emit) => {
        const locked = await sourcesDb.getForUpdate(db, name);
        if (!locked) return undefined;
        // Read under lock: an API upload or another source racing for a name loses to the check below.
        const names = [...tree.modules.map((m) => m.name), ...referencedModules(tree)];
        const d = diffTree(
          name,
          tree,
          await sourceCatalogDb.modules(db, name, names, true),
          await sourceCatalogDb.assignments(
            db,
            name,
            tree.assignments.map((a) => a.name),
            true,
          ),
        );
        if (d.errors.length) throw new TreeRejected(d.errors);
        const now = clock.now();
        const applied = await applyDiff(db, emit, { source: name, commit, now, actor, diff: d });
        const requested = locked.next_sync_at < lease;
        await sourcesDb.recordSuccess(db, name, {
          commit,
          now,
          next_sync_at: requested ? locked.next_sync_at : now + locked.interval_s * 1000,
        });
        const changes = applied.created + applied.updated + applied.removed;
        if (commit !== locked.commit && locked.commit !== "")
          log.info({ source: name, from: locked.commit, to: commit }, "source head moved");
        if (commit !== locked.commit || changes > 0 || locked.status !== "ok")
          await emit({
            type: "source.synced",
            summary: `source ${name} synced to ${short(commit)}: ${applied.created} created, ${applied.updated} updated, ${applied.removed} removed`,
            actor,
            target: sourceRef(name),
            metadata: {
              commit,
              previous_commit: locked.commit,
              created: applied.created,
              updated: applied.updated,
              removed: applied.removed,
              modules: tree.modules.length,
              assignments: tree.assignments.length,
              kept_in_use: applied.kept,
              trigger: triggerMeta(trigger),
            },
          });
        return d;
      });
    } catch (err) {
      if (err instanceof TreeRejected) return fail(name, trigger, lease, treeFailure(commit, err.errors));
      throw err;
    }
    if (diff) await applyOnSync(name, commit, diff);
  }

  /**
   * Starts (without waiting for) an apply of every apply_on_sync assignment the sync reached, with
   * its sync batch settings. Still under the source's lock, so the catalog holds this commit.
   */
  async function applyOnSync(name: string, commit: string, diff: TreeDiff): Promise<void> {
    const due = touched(diff).filter((t) => t.assignment.apply_on_sync);
    if (due.length === 0) return;
    const actor = sourceActor(name);
    try {
      const agents = await approvedAgents(clients, actor);
      for (const { assignment: t } of due) {
        const row = await assignmentsDb.get(pool, t.name);
        if (!row || row.source !== name) continue;
        const { run } = await fanout.start({
          assignment: row,
          kind: "apply",
          batch: row.sync_batch,
          maxFailures: row.sync_max_failures,
          actor,
          sources: await loadSources(pool, cache, row.modules),
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

  const inflight = new Set<Promise<unknown>>();

  function sync(name: string, trigger: SyncTrigger): Promise<{ queued: boolean }> {
    const p = syncLocked(name, trigger);
    inflight.add(p);
    void p.finally(() => inflight.delete(p)).catch(() => {});
    return p;
  }

  async function syncLocked(name: string, trigger: SyncTrigger): Promise<{ queued: boolean }> {
    if (!(await sourcesDb.get(pool, name))) throw notFound("source_not_found", `no git source '${name}'`);
    const ran = await withJobLock(pool, `source:${name}`, async () => {
      try {
        await attempt(name, trigger);
      } catch (err) {
        log.error({ err, source: name, trigger: trigger.kind }, "source sync failed unexpectedly");
        throw err;
      }
    });
    if (ran) return { queued: false };
    // Another sync of this source is under way (here or on another replica): it, or the next tick, picks this up.
    await sourcesDb.makeDue(pool, name, clock.now());
    return { queued: true };
  }

  return {
    sync,
    async syncDue() {
      let ran = 0;
      for (const name of await sourcesDb.due(pool, clock.now())) {
        try {
          if (!(await sync(name, { kind: "schedule", actor: sourceActor(name) })).queued) ran++;
        } catch {
          // Logged by sync; the other due sources still run.
        }
      }
      return ran;
    },
    plan: (name, ref, waitMs, actor) => planSource(engine, box, name, ref, waitMs, actor),
    async drain() {
      await Promise.allSettled([...inflight]);
    },
  };
}
