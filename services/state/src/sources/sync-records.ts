import { backoff, type Actor, type EventInput, type OrchError } from "@orch/kit";
import type { SourceFileErrorRow, SourceRow } from "../db/sources.js";
import { sourceActor, sourceRef } from "./actor.js";
import { short, type Applied } from "./apply.js";
import { GitError } from "./git.js";
import type { Tree } from "./tree-types.js";

/**
 * What a sync attempt writes on the source's row and in the audit log, decided without I/O: the
 * driver (sync.ts) reads the row under lock, asks here, and writes the answer.
 */

export type SyncTrigger = { kind: "created" | "schedule" | "manual" | "webhook"; actor: Actor };

/** A failed attempt: nothing in the catalog changed; the commit in force stays. */
export interface Failure {
  commit: string;
  reason: string;
  error: string;
  errors: SourceFileErrorRow[];
}

/** A failing source is retried after 5 s, 10 s, 20 s, … but never later than its own interval. */
const RETRY_INITIAL_MS = 5_000;
/** Per-file errors carried by a source.sync_failed event (the row holds them all). */
const MAX_EVENT_ERRORS = 20;

const triggerMeta = (t: SyncTrigger) => ({ kind: t.kind, actor_id: t.actor.id, actor_name: t.actor.name });

/** The tree's own errors, or the catalog's refusal of it; the first one names the failure. */
export function treeFailure(commit: string, errors: SourceFileErrorRow[]): Failure {
  const first = errors[0]!;
  const where = `${first.file || "(tree)"}${first.line ? `:${first.line}` : ""}`;
  const more = errors.length > 1 ? ` (and ${errors.length - 1} more)` : "";
  return { commit, reason: "invalid_tree", error: `${where}: ${first.message}${more}`, errors };
}

/** The branch could not be fetched, or its credentials opened. */
export function fetchFailure(err: GitError | OrchError, branch: string): Failure {
  if (err instanceof GitError)
    return {
      commit: "",
      reason: err.failure,
      error: `fetch of branch '${branch}' failed (${err.failure}): ${err.message}`,
      errors: [],
    };
  return { commit: "", reason: err.reason, error: err.message, errors: [] };
}

export interface FailureRecord {
  retryInMs: number;
  next_sync_at: number;
  /** Absent when the source already reports this same failure. */
  event?: EventInput;
}

/** `row`: the source read under lock; `lease`: the attempt's claim (sourcesDb.claim). */
export function failureRecord(
  row: SourceRow,
  f: Failure,
  o: { lease: number; now: number; trigger: SyncTrigger },
): FailureRecord {
  const retryInMs = backoff({ initialMs: RETRY_INITIAL_MS, maxMs: row.interval_s * 1000 })(row.failures);
  // A request that came in during this attempt (makeDue) is kept: it may carry the fix.
  const next = Math.min(o.now + retryInMs, row.next_sync_at < o.lease ? row.next_sync_at : Number.POSITIVE_INFINITY);
  // A source failing the same way on every retry reports it once.
  if (row.status === "error" && row.attempted_commit === f.commit && row.error === f.error)
    return { retryInMs, next_sync_at: next };
  const first = f.errors[0];
  const name = row.name;
  const event: EventInput = {
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
      trigger: triggerMeta(o.trigger),
    },
  };
  return { retryInMs, next_sync_at: next, event };
}

export interface SyncedRecord {
  next_sync_at: number;
  /** Absent when nothing changed and the source was already ok. */
  event?: EventInput;
}

/** `row`: the source read under lock, before the sync's writes. */
export function syncedRecord(
  row: SourceRow,
  applied: Applied,
  o: { commit: string; tree: Tree; lease: number; now: number; trigger: SyncTrigger },
): SyncedRecord {
  const { commit } = o;
  // A request queued during the attempt keeps the source due.
  const requested = row.next_sync_at < o.lease;
  const next_sync_at = requested ? row.next_sync_at : o.now + row.interval_s * 1000;
  const changes = applied.created + applied.updated + applied.removed;
  if (commit === row.commit && changes === 0 && row.status === "ok") return { next_sync_at };
  const event: EventInput = {
    type: "source.synced",
    summary: `source ${row.name} synced to ${short(commit)}: ${applied.created} created, ${applied.updated} updated, ${applied.removed} removed`,
    actor: sourceActor(row.name),
    target: sourceRef(row.name),
    metadata: {
      commit,
      previous_commit: row.commit,
      created: applied.created,
      updated: applied.updated,
      removed: applied.removed,
      modules: o.tree.modules.length,
      assignments: o.tree.assignments.length,
      kept_in_use: applied.kept,
      trigger: triggerMeta(o.trigger),
    },
  };
  return { next_sync_at, event };
}
