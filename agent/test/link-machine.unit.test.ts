import { create } from "@bufbuild/protobuf";
import * as grpc from "@grpc/grpc-js";
import { WelcomeSchema } from "@orch/contracts";
import t from "tap";
import { backoffDelay } from "../src/link/backoff.js";
import type { LinkOutcome, Send } from "../src/link/client.js";
import {
  REJECTED_RETRY_MS,
  initialAgentState,
  step,
  type AgentEffect,
  type AgentEvent,
  type AgentState,
  type Transition,
} from "../src/link/machine.js";

// The agent's link lifecycle (link/machine.ts) without I/O. The real daemon is driven end to end
// by link-runtime, link-reconnect, link-discovery and commands-link.

const SERVER = "10.0.0.1:7443";
const credentials = grpc.credentials.createInsecure();
const send: Send = () => undefined;
const attrs = { hostname: "web-1", os: "linux" };
const welcome = (over: { status?: string; name?: string; metricsIntervalSeconds?: number } = {}) =>
  create(WelcomeSchema, { nodeId: "n1", status: "pending", ...over });
const closed = (wasUp: boolean, detail = "server ended the link"): LinkOutcome => ({ kind: "closed", wasUp, detail });

function run(s: AgentState, ...events: AgentEvent[]): Transition {
  let tr: Transition = { state: s, effects: [] };
  for (const e of events) tr = step(tr.state, e);
  return tr;
}
/** "phase effect effect …": the shape of a transition. */
const shape = (tr: Transition) => [tr.state.phase, ...tr.effects.map((e) => e.type)].join(" ");
const logs = (tr: Transition) =>
  tr.effects.filter((e): e is Extract<AgentEffect, { type: "log" }> => e.type === "log").map((e) => e.message);
const find = <K extends AgentEffect["type"]>(tr: Transition, type: K) =>
  tr.effects.find((e): e is Extract<AgentEffect, { type: K }> => e.type === type);

const ok = { type: "credentials", result: { ok: true, credentials }, attributes: attrs, jitter: 0.5 } as const;
const mismatch = {
  type: "credentials",
  result: { ok: false, reason: "server_fingerprint_mismatch", detail: "presented sha256:aa" },
  attributes: attrs,
  jitter: 0.5,
} as const;

// One state per phase, reached through the machine itself.
const idle = initialAgentState(15);
const securing = run(idle, { type: "start", server: SERVER, discover: false }).state;
const discovering = run(idle, { type: "start", server: undefined, discover: true }).state;
const linking = run(securing, ok).state;
const up = run(linking, { type: "welcome", welcome: welcome(), send }).state;
const waiting = run(up, { type: "link_ended", outcome: closed(true), jitter: 0.5 }).state;
const stopping = run(up, { type: "stop" }).state;
const stopped = run(idle, { type: "stop" }).state;

t.test("start dials a given server, else listens for discovery, else fails", async (t) => {
  const dial = run(idle, { type: "start", server: SERVER, discover: true });
  t.equal(shape(dial), "securing log secure");
  t.match(dial.effects[0], { fields: { server: SERVER, attempt: 1 }, message: "connecting to the agents service" });
  t.equal(shape(run(idle, { type: "start", server: undefined, discover: true })), "discovering listen_discovery");
  const fail = run(idle, { type: "start", server: undefined, discover: false });
  t.equal(shape(fail), "idle fail");
  t.match(find(fail, "fail"), { message: /no server/ });
  t.equal(shape(run(securing, { type: "start", server: SERVER, discover: false })), "securing", "only once");
});

t.test("a discovered server is saved and dialled; only while discovering", async (t) => {
  const tr = run(discovering, { type: "discovered", server: SERVER });
  t.equal(shape(tr), "securing save_server log secure");
  t.match(find(tr, "save_server"), { server: SERVER });
  t.equal(shape(run(stopped, { type: "discovered", server: SERVER })), "stopped");
  t.equal(shape(run(linking, { type: "discovered", server: "10.9.9.9:1" })), "linking");
});

t.test("credentials open the link with the Hello's attributes", async (t) => {
  const tr = run(securing, ok);
  t.equal(shape(tr), "linking open_link");
  t.same(find(tr, "open_link"), { type: "open_link", server: SERVER, credentials, attributes: attrs });
});

t.test("refused credentials back off; a fingerprint mismatch is an error, others a warning", async (t) => {
  const tr = run(securing, mismatch);
  t.equal(shape(tr), "waiting log sleep");
  const delay = backoffDelay(0, { baseMs: 500, capMs: 30_000, random: () => 0.5 });
  t.same(find(tr, "sleep"), { type: "sleep", ms: delay });
  t.match(tr.effects[0], {
    level: "error",
    fields: { server: SERVER, reason: "server_fingerprint_mismatch", retry_in_ms: delay },
  });
  const unreadable = run(securing, { ...mismatch, result: { ok: false, reason: "ca_unreadable", detail: "x" } });
  t.match(unreadable.effects[0], { level: "warn", message: "could not connect; retrying" });
  // Each failure doubles the window: the next attempt is attempt 2, and waits on exponent 1.
  const again = run(tr.state, { type: "wake" }, mismatch);
  t.same(find(again, "sleep"), {
    type: "sleep",
    ms: backoffDelay(1, { baseMs: 500, capMs: 30_000, random: () => 0.5 }),
  });
  t.match(run(tr.state, { type: "wake" }).effects[0], { fields: { attempt: 2 } });
});

t.test("the first Welcome brings the link up and schedules metrics", async (t) => {
  const tr = run(linking, { type: "welcome", welcome: welcome({ name: "web" }), send });
  t.equal(shape(tr), "up link_up log schedule_metrics");
  t.equal(find(tr, "link_up")?.send, send);
  t.match(tr.effects[1], { message: "link up", fields: { status: "pending", name: "web", node_id: "n1" } });
  t.same(find(tr, "schedule_metrics"), { type: "schedule_metrics", everyMs: 15_000 });
  const asked = run(linking, { type: "welcome", welcome: welcome({ metricsIntervalSeconds: 2 }), send });
  t.same(find(asked, "schedule_metrics"), { type: "schedule_metrics", everyMs: 2000 }, "the server's interval wins");
});

t.test("later Welcomes log status changes and reschedule only a changed interval", async (t) => {
  t.equal(shape(run(up, { type: "welcome", welcome: welcome(), send })), "up", "nothing new");
  const approved = run(up, { type: "welcome", welcome: welcome({ status: "approved" }), send });
  t.equal(shape(approved), "up log");
  t.equal(logs(approved)[0], "approval status changed");
  t.match(approved.state, { phase: "up", status: "approved" });
  t.equal(
    shape(run(up, { type: "welcome", welcome: welcome({ metricsIntervalSeconds: 3 }), send })),
    "up schedule_metrics",
  );
  // The interval is kept across connections: a reconnect to the same interval still schedules (first).
  const back = run(waiting, { type: "wake" }, ok, { type: "welcome", welcome: welcome(), send });
  t.equal(shape(back), "up link_up log schedule_metrics");
});

t.test("attributes are sent only while up and only when changed", async (t) => {
  t.equal(shape(run(up, { type: "attributes", attributes: { ...attrs } })), "up", "the Hello's are known");
  const changed = { ...attrs, terminal_enabled: "true" };
  const tr = run(up, { type: "attributes", attributes: changed });
  t.equal(shape(tr), "up send_attributes");
  t.equal(shape(run(tr.state, { type: "attributes", attributes: { ...changed } })), "up");
  for (const s of [linking, waiting, securing, idle])
    t.equal(shape(run(s, { type: "attributes", attributes: changed })), s.phase);
});

t.test("a lost link reconnects with backoff from zero; a refused one keeps counting", async (t) => {
  const lost = run(up, { type: "link_ended", outcome: closed(true), jitter: 0.25 });
  t.equal(shape(lost), "waiting link_down log sleep");
  const delay = backoffDelay(0, { baseMs: 500, capMs: 30_000, random: () => 0.25 });
  t.match(lost.effects[1], { level: "warn", message: "link lost; reconnecting", fields: { retry_in_ms: delay } });
  t.match(lost.state, { failures: 1 });
  const never = run(linking, { type: "link_ended", outcome: closed(false, "handshake timed out"), jitter: 0.25 });
  t.match(never.effects[1], { message: "could not connect; retrying", fields: { detail: "handshake timed out" } });
  const refused: LinkOutcome = { kind: "refused", reason: "protocol_error", message: "m", wasUp: false };
  const r = run(linking, { type: "link_ended", outcome: refused, jitter: 0.25 });
  t.match(r.effects[1], { fields: { detail: "refused: protocol_error" } });
});

t.test("a rejected agent waits REJECTED_RETRY_MS and does not grow its backoff", async (t) => {
  const rejected: LinkOutcome = { kind: "refused", reason: "agent_rejected", message: "m", wasUp: false };
  const tr = run(linking, { type: "link_ended", outcome: rejected, jitter: 0 });
  t.equal(shape(tr), "waiting link_down log sleep");
  t.same(find(tr, "sleep"), { type: "sleep", ms: REJECTED_RETRY_MS });
  t.match(tr.effects[1], { level: "error", fields: { retry_in_s: 300 } });
  t.match(tr.state, { failures: 0 });
});

t.test("stop ends at once when nothing is in flight, else once it comes back", async (t) => {
  t.equal(shape(run(idle, { type: "stop" })), "stopped halt log stopped");
  t.equal(shape(run(discovering, { type: "stop" })), "stopped halt log stopped");
  t.equal(shape(run(waiting, { type: "stop" })), "stopped halt cancel_sleep log stopped");
  t.equal(shape(run(securing, { type: "stop" })), "stopping halt");
  t.equal(shape(run(linking, { type: "stop" })), "stopping halt close_link");
  t.equal(shape(run(up, { type: "stop" })), "stopping halt close_link");
  t.equal(
    shape(run(stopping, { type: "link_ended", outcome: closed(true), jitter: 0 })),
    "stopped link_down log stopped",
  );
  const secStop = run(securing, { type: "stop" }).state;
  t.equal(shape(run(secStop, ok)), "stopped log stopped", "credentials that come back are not used");
  t.equal(shape(run(stopping, { type: "stop" })), "stopping", "a second stop adds nothing");
  t.equal(shape(run(stopped, { type: "stop" })), "stopped");
  t.equal(logs(run(idle, { type: "stop" }))[0], "orch-agent stopped");
});

t.test("events that do not apply change nothing", async (t) => {
  const states: Record<string, AgentState> = { idle, discovering, securing, linking, up, waiting, stopping, stopped };
  const events: Record<string, AgentEvent> = {
    wake: { type: "wake" },
    welcome: { type: "welcome", welcome: welcome(), send },
    link_ended: { type: "link_ended", outcome: closed(true), jitter: 0 },
    credentials: ok,
  };
  const applies: Record<string, string[]> = {
    wake: ["waiting"],
    welcome: ["linking", "up"],
    link_ended: ["linking", "up", "stopping"],
    credentials: ["securing", "stopping"],
  };
  for (const [en, e] of Object.entries(events))
    for (const [sn, s] of Object.entries(states)) {
      if (applies[en]!.includes(sn)) continue;
      const tr = step(s, e);
      t.equal(tr.state, s, `${sn} + ${en}: same state`);
      t.same(tr.effects, [], `${sn} + ${en}: no effects`);
    }
});
