import t from "tap";
import type { ControlMessage } from "../src/terminal/control.js";
import {
  initialSessionState,
  step,
  type SessionEvent,
  type SessionState,
  type SessionTransition,
} from "../src/terminal/lifecycle.js";

// A PTY session's lifecycle (terminal/lifecycle.ts) without a PTY. The real sessions are driven
// end to end by terminal-feature and terminal-batching.

const T0 = 1_700_000_000_000;
const spec = { detachGraceMs: 1000, orphanTimeoutMs: 5000 };
const running = initialSessionState(spec, T0);
const ctl = (message: ControlMessage): SessionEvent => ({ type: "control", message });

function run(s: SessionState, ...events: SessionEvent[]): SessionTransition {
  let tr: SessionTransition = { state: s, effects: [] };
  for (const e of events) tr = step(tr.state, e, T0);
  return tr;
}
const shape = (tr: SessionTransition) => [tr.state.phase, ...tr.effects.map((e) => e.type)].join(" ");

const attached = run(running, ctl({ type: "attach" })).state;
const closing = run(running, { type: "close", reason: "closed" }).state;
const ended = run(running, { type: "exit", code: 0, signal: undefined }).state;

t.test("attach releases the output and cancels the detach grace", async (t) => {
  const tr = run(running, ctl({ type: "attach" }));
  t.equal(shape(tr), "running clear_detach release");
  t.match(tr.state, { attached: 1, detachArmed: false });
  t.match(run(attached, ctl({ type: "attach" })).state, { attached: 2 });
});

t.test("the last detach arms the grace once; it closes only an unattended session", async (t) => {
  const two = run(attached, ctl({ type: "attach" })).state;
  t.equal(shape(run(two, ctl({ type: "detach" }))), "running", "one client still there");
  const tr = run(attached, ctl({ type: "detach" }));
  t.equal(shape(tr), "running arm_detach");
  t.match(tr.effects[0], { ms: 1000 });
  t.equal(shape(run(tr.state, ctl({ type: "detach" }))), "running", "never below zero, armed once");
  t.match(run(tr.state, ctl({ type: "detach" })).state, { attached: 0 });
  const fired = run(tr.state, { type: "detach_timeout" });
  t.equal(shape(fired), "closing release hang_up");
  t.match(fired.state, { closeReason: "detached" });
  t.equal(shape(run(attached, { type: "detach_timeout" })), "running", "someone attached meanwhile");
  // A grace that ran out is not armed again.
  t.equal(shape(run(fired.state, ctl({ type: "detach" }))), "closing");
  const none = initialSessionState({ detachGraceMs: 0, orphanTimeoutMs: 0 }, T0);
  t.equal(shape(run(none, ctl({ type: "attach" }), ctl({ type: "detach" }))), "running", "no grace configured");
});

t.test("the attach timeout releases the output and arms the grace if nobody came", async (t) => {
  t.equal(shape(run(running, { type: "attach_timeout" })), "running release arm_detach");
  t.equal(shape(run(attached, { type: "attach_timeout" })), "running release");
});

t.test("close hangs up every time, arms SIGKILL once, keeps the first reason", async (t) => {
  const first = run(running, ctl({ type: "close", reason: "operator" }));
  t.equal(shape(first), "closing release hang_up");
  t.match(first.effects[1], { armKill: true });
  t.match(first.state, { closeReason: "operator" });
  const second = run(first.state, ctl({ type: "ended", reason: "session ended" }));
  t.equal(shape(second), "closing release hang_up");
  t.match(second.effects[1], { armKill: false });
  t.match(second.state, { closeReason: "operator" });
  t.match(run(running, ctl({ type: "close" })).state, { closeReason: "closed" });
  t.match(run(running, ctl({ type: "ended" })).state, { closeReason: "ended" });
  t.equal(shape(run(ended, { type: "close", reason: "late" })), "ended", "an ended session is left alone");
});

t.test("heartbeats are published; a session without keepalives is closed as orphaned", async (t) => {
  t.equal(shape(step(running, { type: "heartbeat" }, T0 + 5000)), "running publish_heartbeat");
  const orphaned = step(running, { type: "heartbeat" }, T0 + 5001);
  t.equal(shape(orphaned), "closing publish_heartbeat release hang_up");
  t.match(orphaned.state, { closeReason: "orphaned" });
  const kept = step(running, ctl({ type: "keepalive" }), T0 + 4000).state;
  t.equal(shape(step(kept, { type: "heartbeat" }, T0 + 8000)), "running publish_heartbeat");
  const unchecked = initialSessionState({ detachGraceMs: 0, orphanTimeoutMs: 0 }, T0);
  t.equal(shape(step(unchecked, { type: "heartbeat" }, T0 + 1e9)), "running publish_heartbeat");
});

t.test("resize applies until the shell exits; heartbeat and exit messages are ignored", async (t) => {
  const tr = run(running, ctl({ type: "resize", cols: 100, rows: 30 }));
  t.same(tr.effects, [{ type: "resize", cols: 100, rows: 30 }]);
  t.equal(shape(run(closing, ctl({ type: "resize", cols: 100, rows: 30 }))), "closing resize");
  t.equal(shape(run(ended, ctl({ type: "resize", cols: 100, rows: 30 }))), "ended");
  t.equal(shape(run(running, ctl({ type: "heartbeat" }))), "running");
  t.equal(shape(run(running, ctl({ type: "exit", code: 0, signal: 0, reason: "x" }))), "running");
});

t.test("exit finishes with the first close reason, or exit", async (t) => {
  const tr = run(running, { type: "exit", code: 3, signal: undefined });
  t.equal(shape(tr), "ended finish");
  t.same(tr.effects[0], { type: "finish", code: 3, signal: undefined, reason: "exit" });
  const closed = run(closing, { type: "exit", code: 0, signal: 1 });
  t.same(closed.effects[0], { type: "finish", code: 0, signal: 1, reason: "closed" });
  t.equal(shape(run(ended, { type: "attach_timeout" })), "ended release", "release after the end is harmless");
});
