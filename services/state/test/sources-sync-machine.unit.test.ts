import { precondition } from "@orch/kit";
import t from "tap";
import type { SourceFileErrorRow, SourceRow } from "../src/db/sources.js";
import type { TreeDiff } from "../src/sources/diff.js";
import { GitError } from "../src/sources/git.js";
import {
  initialSyncState,
  isDone,
  step,
  type SyncEffect,
  type SyncEvent,
  type SyncState,
} from "../src/sources/sync-machine.js";
import { failureRecord, syncedRecord, type SyncTrigger } from "../src/sources/sync-records.js";
import type { Tree, TreeAssignment } from "../src/sources/tree-types.js";

// One source sync attempt's state machine (sources/sync-machine.ts) and what it records
// (sources/sync-records.ts), without I/O. The driver runs against a real repository and database
// in sources-sync.test.ts.

const NOW = 1_700_000_000_000;
const GIT_TIMEOUT = 30_000;
const ADMIN = { id: "op-1", name: "admin", type: "operator", role: "admin" } as const;
const trigger: SyncTrigger = { kind: "manual", actor: ADMIN };
const COMMIT = "0123456789abcdef0123456789abcdef01234567";

const row = (over: Partial<SourceRow> = {}): SourceRow => ({
  name: "infra",
  url: "https://git.example/infra.git",
  branch: "main",
  path: "",
  interval_s: 300,
  auth_kind: "none",
  auth_sealed: null,
  webhook_sealed: Buffer.alloc(0),
  status: "ok",
  commit: "",
  synced_at: 0,
  attempted_at: 0,
  attempted_commit: "",
  next_sync_at: NOW + 300_000,
  failures: 0,
  error: "",
  errors: [],
  created_at: 0,
  created_by: "op-1",
  ...over,
});

const assignment = (name: string, apply_on_sync: boolean): TreeAssignment => ({
  file: `assignments/${name}.yaml`,
  name,
  selector: "role=web",
  modules: ["base"],
  description: null,
  enforce: false,
  apply_on_sync,
  batch: "",
  max_failures: null,
});

const tree = (errors: SourceFileErrorRow[] = []): Tree => ({ modules: [], assignments: [], errors });
const fileError = (file: string, line: number, message: string): SourceFileErrorRow => ({
  file,
  line,
  column: 1,
  code: "invalid_request",
  message,
});

const diff = (created: TreeAssignment[] = []): TreeDiff => ({
  modules: { created: [], updated: [], restored: [], unchanged: [], removed: [] },
  assignments: { created, updated: [], unchanged: [], removed: [] },
  contentChanged: new Set(),
  errors: [],
});

/** Steps through `events` from the start, collecting every effect. */
function run(...events: SyncEvent[]): { state: SyncState; effects: SyncEffect[] } {
  let state = initialSyncState("infra", trigger, GIT_TIMEOUT);
  const effects: SyncEffect[] = [];
  for (const e of events) {
    const next = step(state, e, NOW);
    state = next.state;
    effects.push(...next.effects);
  }
  return { state, effects };
}

const LEASE = NOW + 300_000 + 2 * GIT_TIMEOUT;
const toFetching: SyncEvent[] = [{ type: "loaded", row: row() }, { type: "claimed" }];
const toApplying: SyncEvent[] = [...toFetching, { type: "fetched", read: { commit: COMMIT, tree: tree() } }];

t.test("a deleted source is done at once, with nothing to do", async (t) => {
  const { state, effects } = run({ type: "loaded", row: undefined });
  t.match(state, { phase: "done", outcome: "gone" });
  t.same(effects, []);
  t.ok(isDone(state));
});

t.test("the source is claimed until one interval and two git timeouts from now, then fetched", async (t) => {
  const claimed = run({ type: "loaded", row: row() });
  t.match(claimed.state, { phase: "claiming", lease: LEASE });
  t.same(claimed.effects, [{ type: "claim", name: "infra", lease: LEASE }]);
  const fetching = run(...toFetching);
  t.equal(fetching.state.phase, "fetching");
  t.same(fetching.effects.at(-1), { type: "fetch", row: row() });
});

t.test("a valid tree is applied in one transaction", async (t) => {
  const { state, effects } = run(...toApplying);
  t.match(state, { phase: "applying", commit: COMMIT, lease: LEASE });
  t.same(effects.at(-1), { type: "apply", name: "infra", lease: LEASE, commit: COMMIT, tree: tree(), trigger });
});

t.test("applied without apply_on_sync assignments: done", async (t) => {
  const { state, effects } = run(...toApplying, {
    type: "applied",
    synced: { diff: diff([assignment("web", false)]), previousCommit: "" },
  });
  t.match(state, { phase: "done", outcome: "synced" });
  t.equal(effects.at(-1)?.type, "apply", "no log for a first sync, no runs");
});

t.test("applied with apply_on_sync assignments: their runs start, then done", async (t) => {
  const web = assignment("web", true);
  const { state, effects } = run(...toApplying, {
    type: "applied",
    synced: { diff: diff([assignment("db", false), web]), previousCommit: "f".repeat(40) },
  });
  t.match(state, { phase: "starting_runs", commit: COMMIT });
  t.same(effects.slice(-2), [
    {
      type: "log",
      level: "info",
      fields: { source: "infra", from: "f".repeat(40), to: COMMIT },
      message: "source head moved",
    },
    { type: "start_runs", name: "infra", commit: COMMIT, due: [web] },
  ]);
  t.match(step(state, { type: "runs_started" }, NOW).state, { phase: "done", outcome: "synced" });
});

t.test("the source deleted before the apply locked it: done", async (t) => {
  t.match(run(...toApplying, { type: "applied", synced: undefined }).state, { phase: "done", outcome: "gone" });
});

t.test("a tree with errors is recorded as failed, naming the first error", async (t) => {
  const errors = [fileError("modules/a.yaml", 3, "bad"), fileError("assignments/b.yaml", 0, "worse")];
  const { state, effects } = run(...toFetching, { type: "fetched", read: { commit: COMMIT, tree: tree(errors) } });
  const failure = { commit: COMMIT, reason: "invalid_tree", error: "modules/a.yaml:3: bad (and 1 more)", errors };
  t.match(state, { phase: "failing", failure });
  t.same(effects.at(-1), { type: "record_failure", name: "infra", lease: LEASE, failure, trigger });
  const done = step(state, { type: "failure_recorded", retryInMs: 5000 }, NOW);
  t.match(done.state, { phase: "done", outcome: "failed" });
  t.same(done.effects, [
    {
      type: "log",
      level: "warn",
      fields: { source: "infra", commit: COMMIT, reason: "invalid_tree", retry_in_ms: 5000, trigger: "manual" },
      message: "source sync failed: modules/a.yaml:3: bad (and 1 more)",
    },
  ]);
});

t.test("a tree the catalog refuses is recorded as failed", async (t) => {
  const errors = [fileError("", 0, "module 'x' is owned elsewhere")];
  const { state } = run(...toApplying, { type: "rejected", errors });
  t.match(state, {
    phase: "failing",
    failure: { reason: "invalid_tree", error: "(tree): module 'x' is owned elsewhere" },
  });
});

t.test("a fetch failure is recorded with git's reason, or the keyring's", async (t) => {
  const git = run(...toFetching, { type: "fetch_failed", error: new GitError("unreachable", "no route") });
  t.match(git.state, {
    phase: "failing",
    failure: {
      commit: "",
      reason: "unreachable",
      error: "fetch of branch 'main' failed (unreachable): no route",
      errors: [],
    },
  });
  const keys = precondition("source_keys_unset", "cannot open");
  const sealed = run(...toFetching, { type: "fetch_failed", error: keys });
  t.match(sealed.state, { phase: "failing", failure: { reason: "source_keys_unset", error: "cannot open" } });
});

t.test("an event that does not fit the state changes nothing", async (t) => {
  const start = initialSyncState("infra", trigger, GIT_TIMEOUT);
  for (const e of [
    { type: "claimed" },
    { type: "runs_started" },
    { type: "failure_recorded", retryInMs: 1 },
    { type: "applied", synced: undefined },
    { type: "rejected", errors: [] },
  ] as SyncEvent[])
    t.same(step(start, e, NOW), { state: start, effects: [] }, e.type);
});

t.test(
  "failureRecord: backoff within the interval; a request made meanwhile is kept; repeats stay quiet",
  async (t) => {
    const f = { commit: COMMIT, reason: "invalid_tree", error: "x: bad", errors: [] };
    const first = failureRecord(row({ failures: 0 }), f, { lease: LEASE, now: NOW, trigger });
    t.equal(first.retryInMs, 5000);
    t.equal(first.next_sync_at, NOW + 5000);
    t.match(first.event, {
      type: "source.sync_failed",
      summary: "sync of source infra @ 0123456 failed: x: bad",
      actor: { id: "source:infra", type: "system" },
      metadata: { commit: COMMIT, reason: "invalid_tree", next_attempt_at: NOW + 5000, trigger: { kind: "manual" } },
    });
    t.equal(failureRecord(row({ failures: 10 }), f, { lease: LEASE, now: NOW, trigger }).retryInMs, 300_000);
    const requested = failureRecord(row({ next_sync_at: NOW + 1 }), f, { lease: LEASE, now: NOW, trigger });
    t.equal(requested.next_sync_at, NOW + 1, "made due during the attempt");
    const again = row({ status: "error", attempted_commit: COMMIT, error: "x: bad" });
    t.equal(failureRecord(again, f, { lease: LEASE, now: NOW, trigger }).event, undefined);
  },
);

t.test("syncedRecord: next sync after the interval unless requested; an event only for a change", async (t) => {
  const none = { created: 0, updated: 0, removed: 0, kept: [] };
  const o = { commit: COMMIT, tree: tree(), lease: LEASE, now: NOW, trigger };
  const same = syncedRecord(row({ commit: COMMIT }), none, o);
  t.same(same, { next_sync_at: NOW + 300_000 });
  t.equal(syncedRecord(row({ commit: COMMIT, next_sync_at: NOW + 1 }), none, o).next_sync_at, NOW + 1);
  t.match(syncedRecord(row({ commit: COMMIT, status: "error" }), none, o).event, { type: "source.synced" });
  t.match(syncedRecord(row({ commit: COMMIT }), { ...none, created: 2, kept: ["m"] }, o).event, {
    summary: `source infra synced to 0123456: 2 created, 0 updated, 0 removed`,
    metadata: { commit: COMMIT, previous_commit: COMMIT, created: 2, kept_in_use: ["m"] },
  });
  t.match(syncedRecord(row(), none, o).event, { metadata: { previous_commit: "" } }, "a new head");
});
