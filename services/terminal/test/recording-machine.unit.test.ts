import t from "tap";
import {
  CLOSE_GRACE_MS,
  exitOutcome,
  initialRecordingState,
  step,
  type Limits,
  type RecordingEvent,
  type RecordingState,
} from "../src/recording-machine.js";

// The recording machine (recording-machine.ts), every (state, event) pair. The real recordings are
// driven end to end by recording.test.ts and test/e2e/terminal.test.ts.

const OPENED = 1_700_000_000_000;
const limits: Limits = { agentSilenceMs: 30_000, idleTimeoutMs: 60_000, maxDurationMs: 600_000, heartbeatMs: 5_000 };
const recording = (lastKeepalive = OPENED): RecordingState => ({ phase: "recording", openedAt: OPENED, lastKeepalive });
const closing = (reason: string, since: number, lastKeepalive = OPENED): RecordingState => ({
  phase: "closing",
  openedAt: OPENED,
  lastKeepalive,
  reason,
  since,
});
/** A tick `at` ms after the open, the agent and the operator both active `quiet` ms ago. */
const tick = (at: number, quiet = 0, agentQuiet = quiet): RecordingEvent => ({
  type: "tick",
  now: OPENED + at,
  lastAgentAt: OPENED + at - agentQuiet,
  lastActivityAt: OPENED + at - quiet,
});

t.test("a new recording sends its first keepalive on the first tick", async (t) => {
  const s = initialRecordingState(OPENED);
  t.same(s, { phase: "recording", openedAt: OPENED, lastKeepalive: 0 });
  const r = step(s, tick(100), limits);
  t.same(r.effects, [{ type: "send_keepalive" }]);
  t.same(r.state, recording(OPENED + 100));
});

t.test("keepalives go every heartbeat, not more often", async (t) => {
  t.same(step(recording(), tick(4_999), limits), { state: recording(), effects: [] });
  const r = step(recording(), tick(5_000), limits);
  t.same(r.effects, [{ type: "send_keepalive" }]);
  t.same(r.state, recording(OPENED + 5_000));
});

t.test("an agent silent too long fails the session, without a keepalive", async (t) => {
  const r = step(recording(), tick(40_000, 0, 30_001), limits);
  t.same(r, {
    state: { phase: "ended" },
    effects: [{ type: "finish", outcome: { status: "failed", reason: "agent_lost", exitCode: null } }],
  });
  t.same(step(recording(), tick(1_000, 0, 30_000), limits).effects, [], "silent exactly the limit is still fine");
});

t.test("an idle session is asked to close", async (t) => {
  const r = step(recording(OPENED + 70_000), tick(70_001, 60_001, 0), limits);
  t.same(r, {
    state: closing("idle_timeout", OPENED + 70_001, OPENED + 70_000),
    effects: [{ type: "send_close", reason: "idle_timeout" }],
  });
});

t.test("only input or output holds the idle timeout off; the agent's heartbeats do not", async (t) => {
  t.same(step(recording(OPENED + 70_000), tick(70_000, 60_000, 0), limits).effects, [], "idle exactly the limit");
  const r = step(recording(OPENED + 70_000), tick(70_001, 60_001, 1), limits);
  t.same(r.effects, [{ type: "send_close", reason: "idle_timeout" }], "a heartbeat 1 ms ago changes nothing");
  t.same(step(r.state, tick(70_500, 0, 0), limits).effects, [], "activity after the close does not reopen it");
  t.equal(step(r.state, tick(70_500, 0, 0), limits).state.phase, "closing");
});

t.test("a session past its maximum duration is asked to close (that reason wins over idle)", async (t) => {
  const r = step(recording(OPENED + 600_001), tick(600_001, 60_001, 0), limits);
  t.same(r.effects, [{ type: "send_close", reason: "max_duration" }]);
  t.same(r.state, closing("max_duration", OPENED + 600_001, OPENED + 600_001));
});

t.test("closing and keepalive due in one tick: both, keepalive last", async (t) => {
  const r = step(recording(), tick(600_001, 0, 0), limits);
  t.same(r.effects, [{ type: "send_close", reason: "max_duration" }, { type: "send_keepalive" }]);
  t.same(r.state, closing("max_duration", OPENED + 600_001, OPENED + 600_001));
});

t.test("a closing session is finalised once the grace period is over", async (t) => {
  const s = closing("idle_timeout", OPENED + 1_000, OPENED + 1_000);
  t.same(step(s, tick(1_000 + CLOSE_GRACE_MS, 0, 0), limits), { state: s, effects: [] }, "waits the grace period");
  const r = step(s, tick(1_001 + CLOSE_GRACE_MS, 0, 0), limits);
  t.same(r, {
    state: { phase: "ended" },
    effects: [{ type: "finish", outcome: { status: "closed", reason: "idle_timeout", exitCode: null } }],
  });
});

t.test("a closing session ignores the agent's silence and still sends keepalives", async (t) => {
  const s = closing("closed_by_operator", OPENED + 10_000);
  const r = step(s, tick(10_500, 0, 100_000), limits);
  t.same(r, { state: { ...s, lastKeepalive: OPENED + 10_500 }, effects: [{ type: "send_keepalive" }] });
  const end = step(s, tick(20_000, 0, 100_000), limits);
  t.same(end.effects, [
    { type: "finish", outcome: { status: "closed", reason: "closed_by_operator", exitCode: null } },
    { type: "send_keepalive" },
  ]);
  t.same(end.state, { phase: "ended" });
});

t.test("a close request starts the grace period once", async (t) => {
  const r = step(recording(), { type: "close_requested", now: OPENED + 7 }, limits);
  t.same(r, { state: closing("closed_by_operator", OPENED + 7), effects: [] });
  const s = closing("idle_timeout", OPENED + 3);
  t.same(step(s, { type: "close_requested", now: OPENED + 9 }, limits), { state: s, effects: [] });
});

t.test("the shell's end finalises the session", async (t) => {
  const exit = (code: number, signal: number, reason: string): RecordingEvent => ({
    type: "exit",
    code,
    signal,
    reason,
  });
  const finish = (s: RecordingState, e: RecordingEvent) => step(s, e, limits);
  t.same(finish(recording(), exit(0, 0, "exit")), {
    state: { phase: "ended" },
    effects: [{ type: "finish", outcome: { status: "closed", reason: "exit", exitCode: 0 } }],
  });
  t.same(finish(recording(), exit(0, 9, "exit")).effects[0], {
    type: "finish",
    outcome: { status: "closed", reason: "exit", exitCode: 137 },
  });
  t.same(finish(recording(), exit(0, 0, "detached")).effects[0], {
    type: "finish",
    outcome: { status: "closed", reason: "detached", exitCode: 0 },
  });
  t.same(finish(closing("max_duration", OPENED), exit(1, 0, "detached")).effects[0], {
    type: "finish",
    outcome: { status: "closed", reason: "max_duration", exitCode: 1 },
  });
  t.same(finish(closing("idle_timeout", OPENED), exit(2, 0, "orphaned")).effects[0], {
    type: "finish",
    outcome: { status: "failed", reason: "recorder_lost", exitCode: 2 },
  });
  t.same(finish(recording(), exit(2, 0, "agent_disconnected")).effects[0], {
    type: "finish",
    outcome: { status: "failed", reason: "agent_lost", exitCode: null },
  });
  t.same(exitOutcome({ phase: "ended" }, 3, 0, "exit"), { status: "closed", reason: "exit", exitCode: 3 });
});

t.test("a lost lease and a shutdown release the session without finalising it", async (t) => {
  for (const s of [recording(), closing("idle_timeout", OPENED)]) {
    t.same(step(s, { type: "lease_lost" }, limits), {
      state: { phase: "ended" },
      effects: [{ type: "release", why: "lease_lost" }],
    });
    t.same(step(s, { type: "shutdown" }, limits), {
      state: { phase: "ended" },
      effects: [{ type: "release", why: "shutdown" }],
    });
  }
});

t.test("an abort discards the recording, even one being finalised", async (t) => {
  for (const s of [recording(), closing("idle_timeout", OPENED), { phase: "ended" } as RecordingState])
    t.same(step(s, { type: "abort" }, limits), { state: { phase: "ended" }, effects: [{ type: "discard" }] });
});

t.test("an ended session ignores everything else", async (t) => {
  const ended: RecordingState = { phase: "ended" };
  const events: RecordingEvent[] = [
    tick(1_000_000, 1_000_000),
    { type: "exit", code: 0, signal: 0, reason: "exit" },
    { type: "close_requested", now: OPENED },
    { type: "lease_lost" },
    { type: "shutdown" },
  ];
  for (const e of events) t.same(step(ended, e, limits), { state: ended, effects: [] }, e.type);
});
