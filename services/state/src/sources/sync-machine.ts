import type { OrchError } from "@orch/kit";
import type { SourceFileErrorRow, SourceRow } from "../db/sources.js";
import { touched, type TreeDiff } from "./diff.js";
import type { GitError } from "./git.js";
import type { ReadTree } from "./read.js";
import { fetchFailure, treeFailure, type Failure, type SyncTrigger } from "./sync-records.js";
import type { Tree, TreeAssignment } from "./tree-types.js";

/**
 * One sync attempt of a git source, under its advisory lock, as a pure transition function:
 * `step(state, event, now)` returns the next state and the effects the driver (sync.ts) must
 * perform, in order. Nothing here does I/O; results of I/O come back as events.
 *
 *   loading → claiming → fetching → applying → starting_runs → done
 *
 * A fetch failure, a tree with errors or a tree the catalog refuses goes to `failing`, which
 * records the failure and is `done`. A source deleted meanwhile is `done` at once.
 */

interface Base {
  name: string;
  trigger: SyncTrigger;
}

/** Until when the attempt holds the source (sourcesDb.claim); a sync requested later is kept due. */
type Leased = Base & { lease: number };

export type SyncState =
  | (Base & { phase: "loading"; gitTimeoutMs: number })
  | (Leased & { phase: "claiming"; row: SourceRow })
  | (Leased & { phase: "fetching"; row: SourceRow })
  | (Leased & { phase: "applying"; commit: string; tree: Tree })
  | (Base & { phase: "starting_runs"; commit: string })
  | (Leased & { phase: "failing"; failure: Failure })
  | (Base & { phase: "done"; outcome: "gone" | "synced" | "failed" });

/** What the apply transaction reports: the diff written, and the commit that was in force. */
export interface Synced {
  diff: TreeDiff;
  previousCommit: string;
}

export type SyncEvent =
  /** The source's row, undefined once deleted. */
  | { type: "loaded"; row: SourceRow | undefined }
  | { type: "claimed" }
  | { type: "fetched"; read: ReadTree }
  /** Only failures a sync records (isRecordable); any other error is the driver's to throw. */
  | { type: "fetch_failed"; error: GitError | OrchError }
  /** Undefined: the source was deleted before the transaction locked it. */
  | { type: "applied"; synced: Synced | undefined }
  /** The catalog refused the tree (an object owned elsewhere); the transaction rolled back. */
  | { type: "rejected"; errors: SourceFileErrorRow[] }
  | { type: "runs_started" }
  | { type: "failure_recorded"; retryInMs: number };

export type LogLevel = "info" | "warn";

export type SyncEffect =
  | { type: "load"; name: string }
  | { type: "claim"; name: string; lease: number }
  | { type: "fetch"; row: SourceRow }
  /** One transaction: diff the tree against the catalog under lock, write it, record success. */
  | { type: "apply"; name: string; lease: number; commit: string; tree: Tree; trigger: SyncTrigger }
  /** Start (without waiting for) an apply of each assignment, with its sync batch settings. */
  | { type: "start_runs"; name: string; commit: string; due: TreeAssignment[] }
  | { type: "record_failure"; name: string; lease: number; failure: Failure; trigger: SyncTrigger }
  | { type: "log"; level: LogLevel; fields: Record<string, unknown>; message: string };

export interface SyncTransition {
  state: SyncState;
  effects: SyncEffect[];
}

export function initialSyncState(name: string, trigger: SyncTrigger, gitTimeoutMs: number): SyncState {
  return { name, trigger, phase: "loading", gitTimeoutMs };
}

export const isDone = (s: SyncState) => s.phase === "done";

const go = (state: SyncState, ...effects: SyncEffect[]): SyncTransition => ({ state, effects });
const baseOf = (s: Base): Base => ({ name: s.name, trigger: s.trigger });

function fail(s: Leased, failure: Failure): SyncTransition {
  const { lease, name, trigger } = s;
  return go(
    { ...baseOf(s), lease, phase: "failing", failure },
    { type: "record_failure", name, lease, failure, trigger },
  );
}

function onLoaded(s: Extract<SyncState, { phase: "loading" }>, row: SourceRow | undefined, now: number) {
  if (!row) return go({ ...baseOf(s), phase: "done", outcome: "gone" });
  const lease = now + row.interval_s * 1000 + 2 * s.gitTimeoutMs;
  // Claimed before the fetch: a request queued until now is served by this fetch; one queued later
  // (makeDue pulls next_sync_at below the lease) is seen at the end and keeps the source due.
  return go({ ...baseOf(s), phase: "claiming", row, lease }, { type: "claim", name: s.name, lease });
}

function onFetched(s: Extract<SyncState, { phase: "fetching" }>, { commit, tree }: ReadTree): SyncTransition {
  if (tree.errors.length) return fail(s, treeFailure(commit, tree.errors));
  const { name, lease, trigger } = s;
  return go(
    { ...baseOf(s), lease, phase: "applying", commit, tree },
    { type: "apply", name, lease, commit, tree, trigger },
  );
}

function onApplied(s: Extract<SyncState, { phase: "applying" }>, synced: Synced | undefined): SyncTransition {
  if (!synced) return go({ ...baseOf(s), phase: "done", outcome: "gone" });
  const { name, commit } = s;
  const effects: SyncEffect[] = [];
  if (commit !== synced.previousCommit && synced.previousCommit !== "")
    effects.push({
      type: "log",
      level: "info",
      fields: { source: name, from: synced.previousCommit, to: commit },
      message: "source head moved",
    });
  const due = touched(synced.diff)
    .filter((t) => t.assignment.apply_on_sync)
    .map((t) => t.assignment);
  // Still under the source's lock, so the catalog holds this commit while the runs start.
  if (due.length === 0) return go({ ...baseOf(s), phase: "done", outcome: "synced" }, ...effects);
  return go({ ...baseOf(s), phase: "starting_runs", commit }, ...effects, { type: "start_runs", name, commit, due });
}

function onFailureRecorded(s: Extract<SyncState, { phase: "failing" }>, retryInMs: number): SyncTransition {
  const { failure: f } = s;
  return go(
    { ...baseOf(s), phase: "done", outcome: "failed" },
    {
      type: "log",
      level: "warn",
      fields: { source: s.name, commit: f.commit, reason: f.reason, retry_in_ms: retryInMs, trigger: s.trigger.kind },
      message: `source sync failed: ${f.error}`,
    },
  );
}

/** An event that does not fit the state (a driver bug) leaves it as it is, with nothing to do. */
export function step(s: SyncState, e: SyncEvent, now: number): SyncTransition {
  switch (e.type) {
    case "loaded":
      return s.phase === "loading" ? onLoaded(s, e.row, now) : go(s);
    case "claimed":
      if (s.phase !== "claiming") return go(s);
      return go({ ...s, phase: "fetching" }, { type: "fetch", row: s.row });
    case "fetched":
      return s.phase === "fetching" ? onFetched(s, e.read) : go(s);
    case "fetch_failed":
      return s.phase === "fetching" ? fail(s, fetchFailure(e.error, s.row.branch)) : go(s);
    case "applied":
      return s.phase === "applying" ? onApplied(s, e.synced) : go(s);
    case "rejected":
      return s.phase === "applying" ? fail(s, treeFailure(s.commit, e.errors)) : go(s);
    case "runs_started":
      return s.phase === "starting_runs" ? go({ ...baseOf(s), phase: "done", outcome: "synced" }) : go(s);
    case "failure_recorded":
      return s.phase === "failing" ? onFailureRecorded(s, e.retryInMs) : go(s);
  }
}
