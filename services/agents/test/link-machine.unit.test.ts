import { generateKeyPairSync, sign } from "node:crypto";
import { create, type MessageInitShape } from "@bufbuild/protobuf";
import { AgentFrameSchema, type AgentFrame, type BusMessage } from "@orch/contracts";
import t from "tap";
import type { AgentRow } from "../src/db/agents.js";
import {
  MAX_QUEUED,
  heldNodeId,
  initialLinkState,
  isOpen,
  nodeIdOf,
  step,
  type LinkEffect,
  type LinkEvent,
  type LinkState,
  type Transition,
} from "../src/link/machine.js";

// The agent link's state machine (link/machine.ts), every (state, event) pair. The real links are
// driven end to end by handshake.test.ts, routing.test.ts and the agent's own tests.

type W = { id: string };
type State = LinkState<W>;
type Event = LinkEvent<W>;

const NOW = 1_700_000_000_000;
const nonce = new Uint8Array(32).fill(7);
const base = { session: "S1", address: "10.0.0.5", replica: "r1" };

function agentKey() {
  const { publicKey, privateKey } = generateKeyPairSync("ed25519");
  const hex = Buffer.from(publicKey.export({ format: "jwk" }).x!, "base64url").toString("hex");
  return { hex, sign: (data: Uint8Array) => new Uint8Array(sign(null, data, privateKey)) };
}
const key = agentKey();
const other = agentKey();

type FrameInit = NonNullable<MessageInitShape<typeof AgentFrameSchema>["frame"]>;
const frame = (f: FrameInit): AgentFrame => create(AgentFrameSchema, { frame: f });
const hello = (publicKey = key.hex, attributes: Record<string, string> = { hostname: "web-1" }, version = "1.2.3") =>
  frame({ case: "hello", value: { publicKey, version, attributes } });
const signature = (sig: Uint8Array) => frame({ case: "signature", value: { signature: sig } });
const goodSignature = signature(key.sign(nonce));
const metrics = frame({ case: "metrics", value: { cpuPercent: 12 } });

const row = (over: Partial<AgentRow> = {}): AgentRow => ({
  node_id: "n",
  public_key: key.hex,
  name: null,
  status: "pending",
  tags: {},
  attributes: {},
  connected: false,
  replica: null,
  session: null,
  first_seen: 0,
  last_seen: 0,
  address: "",
  version: "",
  pending_reason: "",
  join_token_id: null,
  ...over,
});

const wiring: W = { id: "wiring-1" };

function run(s: State, ...events: Event[]): Transition<W> {
  let t: Transition<W> = { state: s, effects: [] };
  for (const e of events) t = step(t.state, e, NOW);
  return t;
}

/** "phase[/step] effect effect …": the shape of a transition. */
function shape(t: Transition<W>): string {
  const s = t.state;
  const where = s.phase === "registering" ? `registering/${s.step}` : s.phase;
  return [where, ...t.effects.map((e) => e.type)].join(" ");
}

// One state per phase (and per registration step), reached through the machine itself.
const initial = initialLinkState<W>({ ...base, nonce });
const proof = run(initial, { type: "frame", frame: hello() }).state;
const admitting = run(proof, { type: "frame", frame: goodSignature }).state;
const wiringStep = run(admitting, { type: "admitted", row: row() }).state;
const evicting = run(admitting, { type: "admitted", row: row({ connected: true }) }).state;
const loading = run(wiringStep, { type: "wired", wiring }).state;
const connecting = run(loading, { type: "ready" }).state;
const live = run(connecting, { type: "connected", row: row({ status: "approved", name: "web" }) }).state;
const closingEarly = run(initial, { type: "handshake_timeout" }).state;
const closingLive = run(live, { type: "stream_end", reason: "link_lost" }).state;
const closed = run(closingLive, { type: "torn_down" }).state;
const nodeId = nodeIdOf(admitting)!;

const states: Record<string, State> = {
  awaiting_hello: initial,
  awaiting_proof: proof,
  "registering/admitting": admitting,
  "registering/evicting": evicting,
  "registering/wiring": wiringStep,
  "registering/loading": loading,
  "registering/connecting": connecting,
  live,
  "closing (before registering)": closingEarly,
  "closing (was live)": closingLive,
  closed,
};

const events: Record<string, Event> = {
  "frame hello": { type: "frame", frame: hello() },
  "frame signature": { type: "frame", frame: goodSignature },
  "frame metrics": { type: "frame", frame: metrics },
  handshake_timeout: { type: "handshake_timeout" },
  "stream_end link_lost": { type: "stream_end", reason: "link_lost" },
  "stream_end closed_by_agent": { type: "stream_end", reason: "closed_by_agent" },
  close: { type: "close", reason: "server_shutdown" },
  "evict by another session": { type: "evict", by: "S2" },
  "evict by this session": { type: "evict", by: "S1" },
  "status changed": { type: "status", row: row({ status: "approved", name: "renamed" }) },
  // What the live fixture already knows; news to a link still registering (pending, unnamed).
  "status approved web": { type: "status", row: row({ status: "approved", name: "web" }) },
  "status rejected": { type: "status", row: row({ status: "rejected" }) },
  "status removed": { type: "status", row: undefined },
  admitted: { type: "admitted", row: row() },
  evicted: { type: "evicted" },
  wired: { type: "wired", wiring: { id: "wiring-2" } },
  ready: { type: "ready" },
  connected: { type: "connected", row: row({ status: "approved" }) },
  failed: { type: "failed", error: new Error("db down") },
  torn_down: { type: "torn_down" },
};

const CLOSE = "closing teardown";
const FAIL = "closing log teardown";
/** Pairs not listed leave the state as it is, with no effect. */
const expected: Record<string, Record<string, string>> = {
  awaiting_hello: {
    "frame hello": "awaiting_proof send_challenge",
    "frame signature": CLOSE,
    "frame metrics": CLOSE,
    handshake_timeout: CLOSE,
    "stream_end link_lost": CLOSE,
    "stream_end closed_by_agent": CLOSE,
    close: CLOSE,
    "evict by another session": CLOSE,
    failed: FAIL,
  },
  awaiting_proof: {
    "frame hello": CLOSE,
    "frame signature": "registering/admitting admit",
    "frame metrics": CLOSE,
    handshake_timeout: CLOSE,
    "stream_end link_lost": CLOSE,
    "stream_end closed_by_agent": CLOSE,
    close: CLOSE,
    "evict by another session": CLOSE,
    failed: FAIL,
  },
  "registering/admitting": {
    // Frames wait in the queue (the state changes, not its step).
    "frame hello": "registering/admitting",
    "frame signature": "registering/admitting",
    "frame metrics": "registering/admitting",
    handshake_timeout: CLOSE,
    "stream_end link_lost": CLOSE,
    "stream_end closed_by_agent": CLOSE,
    close: CLOSE,
    "evict by another session": CLOSE,
    admitted: "registering/wiring wire",
    failed: FAIL,
  },
  "registering/evicting": {
    "frame hello": "registering/evicting",
    "frame signature": "registering/evicting",
    "frame metrics": "registering/evicting",
    handshake_timeout: CLOSE,
    "stream_end link_lost": CLOSE,
    "stream_end closed_by_agent": CLOSE,
    close: CLOSE,
    "evict by another session": CLOSE,
    evicted: "registering/wiring wire",
    failed: FAIL,
  },
  "registering/wiring": {
    "frame hello": "registering/wiring",
    "frame signature": "registering/wiring",
    "frame metrics": "registering/wiring",
    handshake_timeout: CLOSE,
    "stream_end link_lost": CLOSE,
    "stream_end closed_by_agent": CLOSE,
    close: CLOSE,
    "evict by another session": CLOSE,
    wired: "registering/loading",
    failed: FAIL,
  },
  "registering/loading": {
    "frame hello": "registering/loading",
    "frame signature": "registering/loading",
    "frame metrics": "registering/loading",
    handshake_timeout: CLOSE,
    "stream_end link_lost": CLOSE,
    "stream_end closed_by_agent": CLOSE,
    close: CLOSE,
    "evict by another session": CLOSE,
    // The hub already holds it, so a _Status notice applies (the agent is told at once).
    "status changed": "registering/loading update_link welcome",
    "status approved web": "registering/loading update_link welcome",
    "status rejected": CLOSE,
    "status removed": CLOSE,
    ready: "registering/connecting mark_connected",
    failed: FAIL,
  },
  "registering/connecting": {
    "frame hello": "registering/connecting",
    "frame signature": "registering/connecting",
    "frame metrics": "registering/connecting",
    handshake_timeout: CLOSE,
    "stream_end link_lost": CLOSE,
    "stream_end closed_by_agent": CLOSE,
    close: CLOSE,
    "evict by another session": CLOSE,
    "status changed": "registering/connecting update_link welcome",
    "status approved web": "registering/connecting update_link welcome",
    "status rejected": CLOSE,
    "status removed": CLOSE,
    connected: "live update_link stop_handshake_timer welcome log",
    failed: FAIL,
  },
  live: {
    "frame hello": "live log",
    "frame signature": "live log",
    "frame metrics": "live record_metrics",
    "stream_end link_lost": CLOSE,
    "stream_end closed_by_agent": CLOSE,
    close: CLOSE,
    "evict by another session": CLOSE,
    "status changed": "live update_link welcome",
    "status rejected": CLOSE,
    "status removed": CLOSE,
    failed: FAIL,
  },
  "closing (before registering)": {
    wired: "closing release",
    connected: "closing undo_connected",
    failed: "closing log",
    torn_down: "closed",
  },
  "closing (was live)": {
    wired: "closing release",
    connected: "closing undo_connected",
    failed: "closing log",
    torn_down: "closed",
  },
  closed: {
    wired: "closed release",
    connected: "closed undo_connected",
    failed: "closed log",
  },
};

t.test("every (state, event) pair", async (t) => {
  for (const [stateName, s] of Object.entries(states)) {
    for (const [eventName, e] of Object.entries(events)) {
      const got = step(s, e, NOW);
      const want = expected[stateName]![eventName];
      if (want === undefined) {
        t.equal(got.state, s, `${stateName} + ${eventName}: ignored`);
        t.same(got.effects, [], `${stateName} + ${eventName}: no effect`);
      } else {
        t.equal(shape(got), want, `${stateName} + ${eventName}`);
      }
    }
  }
});

t.test("hello: a challenge for the claimed key; bad keys and other frames are refused", async (t) => {
  const ok = step(initial, { type: "frame", frame: hello() }, NOW);
  t.same(ok.effects, [{ type: "send_challenge", nonce, nodeId }]);
  t.equal(nodeIdOf(ok.state), undefined, "logs carry the node id only once registration starts");

  const teardown = (tr: Transition<W>) => tr.effects.find((e) => e.type === "teardown");
  t.same(teardown(step(initial, { type: "frame", frame: hello("zz") }, NOW)), {
    type: "teardown",
    reason: "invalid_public_key",
    refusal: { reason: "invalid_public_key", message: "public_key must be a hex Ed25519 key" },
    agentGone: true,
  });
  t.same(teardown(step(initial, { type: "frame", frame: metrics }, NOW)), {
    type: "teardown",
    reason: "protocol_error",
    refusal: { reason: "protocol_error", message: "the first frame must be hello" },
    agentGone: true,
  });
  t.same(teardown(step(proof, { type: "frame", frame: hello() }, NOW))?.refusal, {
    reason: "protocol_error",
    message: "expected the challenge signature",
  });
  t.same(teardown(step(initial, { type: "handshake_timeout" }, NOW)), {
    type: "teardown",
    reason: "handshake_timeout",
    refusal: { reason: "handshake_timeout", message: "the handshake did not complete in time" },
    agentGone: true,
  });
  t.same(teardown(step(proof, { type: "stream_end", reason: "closed_by_agent" }, NOW)), {
    type: "teardown",
    reason: "closed_by_agent",
    agentGone: true,
  });
});

t.test("proof: only the claimed key's signature over this nonce admits", async (t) => {
  const bad = step(proof, { type: "frame", frame: signature(other.sign(nonce)) }, NOW);
  t.same(bad.effects, [
    { type: "log", level: "warn", fields: { node_id: nodeId }, message: "agent handshake: bad signature" },
    {
      type: "teardown",
      reason: "bad_signature",
      refusal: { reason: "bad_signature", message: "the signature does not match the public key" },
      agentGone: true,
    },
  ]);
  const otherNonce = step(proof, { type: "frame", frame: signature(key.sign(new Uint8Array(32))) }, NOW);
  t.equal(otherNonce.state.phase, "closing", "a signature over another nonce is refused");

  const long = run(
    initial,
    { type: "frame", frame: hello(key.hex, { ["k".repeat(200)]: "v".repeat(5000) }, "9".repeat(100)) },
    { type: "frame", frame: goodSignature },
  );
  t.same(long.effects, [
    {
      type: "admit",
      up: {
        nodeId,
        publicKey: key.hex,
        replica: "r1",
        session: "S1",
        address: "10.0.0.5",
        version: "9".repeat(64),
        attributes: { ["k".repeat(128)]: "v".repeat(4096) },
        now: NOW,
      },
    },
  ]);
});

t.test("registration: rejection, eviction of an older holder, removal", async (t) => {
  const rejected = step(admitting, { type: "admitted", row: row({ status: "rejected" }) }, NOW);
  t.same(rejected.effects, [
    {
      type: "teardown",
      reason: "rejected",
      refusal: { reason: "agent_rejected", message: "this agent was rejected by an operator" },
      agentGone: true,
    },
  ]);
  t.match(rejected.state, { phase: "closing", nodeId }, "never connected: no disconnect to record");

  t.same(step(admitting, { type: "admitted", row: row({ connected: true }) }, NOW).effects, [
    { type: "evict_elsewhere", nodeId },
  ]);
  const wire = step(evicting, { type: "evicted" }, NOW).effects[0];
  t.match(wire, { type: "wire", up: { nodeId }, standing: { status: "pending", name: "" } });

  t.same(step(connecting, { type: "connected", row: undefined }, NOW).effects, [
    {
      type: "teardown",
      reason: "removed",
      refusal: { reason: "agent_removed", message: "the agent's record was removed" },
      wiring,
      agentGone: true,
    },
  ]);
  // Rejected while the handshake was in flight: it did become connected, so the disconnect is recorded.
  t.same(step(connecting, { type: "connected", row: row({ status: "rejected" }) }, NOW).effects, [
    {
      type: "teardown",
      reason: "rejected",
      refusal: { reason: "agent_rejected", message: "this agent was rejected by an operator" },
      wiring,
      agentGone: true,
      recordDisconnect: nodeId,
    },
  ]);
  t.same(step(loading, { type: "handshake_timeout" }, NOW).effects[0], {
    type: "teardown",
    reason: "handshake_timeout",
    refusal: { reason: "handshake_timeout", message: "the handshake did not complete in time" },
    wiring,
    agentGone: true,
  });
  const failed = step(wiringStep, { type: "failed", error: "boom" }, NOW);
  t.same(failed.effects, [
    { type: "log", level: "error", fields: { err: "boom" }, message: "agent admission failed" },
    {
      type: "teardown",
      reason: "internal_error",
      refusal: { reason: "server_error", message: "the server could not admit the agent; retry later" },
      agentGone: true,
    },
  ]);
});

t.test("frames before the link is up are queued (bounded) and handled once live", async (t) => {
  const attrs = frame({ case: "attributes", value: { values: { os: "linux" } } });
  let s: State = connecting;
  s = step(s, { type: "frame", frame: attrs }, NOW).state;
  s = step(s, { type: "frame", frame: hello() }, NOW).state;
  for (let i = 0; i < MAX_QUEUED + 5; i++) s = step(s, { type: "frame", frame: metrics }, NOW).state;
  t.equal(s.phase === "registering" && s.queued.length, MAX_QUEUED, "the excess is dropped");

  const up = step(s, { type: "connected", row: row({ status: "approved", name: "web" }) }, NOW);
  const standing = { status: "approved", name: "web" };
  t.same(up.effects.slice(0, 6), [
    { type: "update_link", wiring, standing },
    { type: "stop_handshake_timer" },
    { type: "welcome", nodeId, standing },
    { type: "log", level: "info", fields: { status: "approved" }, message: "agent link up" },
    { type: "store_attributes", wiring, nodeId, attributes: { os: "linux" } },
    { type: "log", level: "debug", fields: { frame: "hello" }, message: "unexpected frame ignored" },
  ]);
  t.equal(up.effects.length, 4 + MAX_QUEUED, "every queued frame, in order");
  t.ok(up.effects.slice(6).every((e) => e.type === "record_metrics"));
  t.match(up.state, { phase: "live", standing, wiring });
});

t.test("an approval noticed while connecting is not undone by the older connected row", async (t) => {
  // The operator approves as soon as "connected" shows; the row marking it connected was read before.
  const noticed = run(connecting, { type: "status", row: row({ status: "approved", name: "web" }) });
  t.match(noticed.state, { phase: "registering", step: "connecting", standing: { status: "approved" }, noticed: true });
  const up = step(noticed.state, { type: "connected", row: row({ status: "pending" }) }, NOW);
  t.match(up.state, { phase: "live", standing: { status: "pending" } }, "the connected row is applied first");
  t.same(up.effects.at(-1), { type: "reread_status", nodeId }, "then the registry is read again");
  const fresh = step(up.state, { type: "status", row: row({ status: "approved", name: "web" }) }, NOW);
  t.match(fresh.state, { phase: "live", standing: { status: "approved", name: "web" } });
  t.same(
    fresh.effects.map((e) => e.type),
    ["update_link", "welcome"],
  );
  const quiet = step(connecting, { type: "connected", row: row({ status: "pending" }) }, NOW);
  t.notOk(
    quiet.effects.some((e) => e.type === "reread_status"),
    "no notice while connecting: no second read",
  );
});

t.test("live frames go to their handler", async (t) => {
  const cases: [FrameInit, LinkEffect<W>][] = [
    [
      { case: "attributes", value: { values: { ["a".repeat(130)]: "b" } } },
      { type: "store_attributes", wiring, nodeId, attributes: { ["a".repeat(128)]: "b" } },
    ],
    [
      { case: "publish", value: { subject: "orch.term.x.out", data: new Uint8Array([1]) } },
      {
        type: "bus_publish",
        wiring,
        message: frame({ case: "publish", value: { subject: "orch.term.x.out", data: new Uint8Array([1]) } }).frame
          .value as BusMessage,
      },
    ],
    [
      { case: "subscribe", value: { subject: "orch.term.x.in" } },
      { type: "bus_subscribe", wiring, subject: "orch.term.x.in" },
    ],
    [
      { case: "unsubscribe", value: { subject: "orch.term.x.in" } },
      { type: "bus_unsubscribe", wiring, subject: "orch.term.x.in" },
    ],
  ];
  for (const [f, want] of cases)
    t.same(step(live, { type: "frame", frame: frame(f) }, NOW).effects, [want], String(f.case));
  const response = frame({ case: "response", value: { id: 4n } });
  t.match(step(live, { type: "frame", frame: response }, NOW).effects, [{ type: "resolve_response", wiring }]);
  t.match(step(live, { type: "frame", frame: metrics }, NOW).effects, [
    { type: "record_metrics", nodeId, sample: { cpuPercent: 12 } },
  ]);
});

t.test("live: closing records the disconnect; sessions survive a replacement or a shutdown", async (t) => {
  const teardown = (e: Event) => step(live, e, NOW).effects.find((x) => x.type === "teardown");
  t.same(teardown({ type: "stream_end", reason: "link_lost" }), {
    type: "teardown",
    reason: "link_lost",
    wiring,
    agentGone: true,
    recordDisconnect: nodeId,
  });
  t.match(teardown({ type: "evict", by: "S2" }), { reason: "replaced", agentGone: false, recordDisconnect: nodeId });
  t.match(teardown({ type: "close", reason: "server_shutdown" }), { agentGone: false });
  t.same(teardown({ type: "close", reason: "rejected", refusal: { reason: "r", message: "m" } }), {
    type: "teardown",
    reason: "rejected",
    refusal: { reason: "r", message: "m" },
    wiring,
    agentGone: true,
    recordDisconnect: nodeId,
  });
  t.match(teardown({ type: "status", row: row({ status: "rejected" }) }), {
    reason: "rejected",
    refusal: { reason: "agent_rejected" },
    recordDisconnect: nodeId,
  });
  t.match(teardown({ type: "status", row: undefined }), { reason: "removed", refusal: { reason: "agent_removed" } });

  const renamed = step(live, { type: "status", row: row({ status: "approved", name: "db" }) }, NOW);
  const standing = { status: "approved", name: "db" };
  t.same(renamed.effects, [
    { type: "update_link", wiring, standing },
    { type: "welcome", nodeId, standing },
  ]);
  t.match(renamed.state, { phase: "live", standing });
});

t.test("closing and closed: late results are undone or released, nothing else happens", async (t) => {
  t.same(step(closingLive, { type: "connected", row: row() }, NOW).effects, [{ type: "undo_connected", nodeId }]);
  t.same(step(closed, { type: "wired", wiring }, NOW).effects, [{ type: "release", wiring, agentGone: true }]);
  const replaced = run(loading, { type: "evict", by: "S2" }).state;
  t.same(step(replaced, { type: "wired", wiring }, NOW).effects, [{ type: "release", wiring, agentGone: false }]);
  // A signature that arrives after the handshake timed out.
  const timedOut = run(proof, { type: "handshake_timeout" }).state;
  t.same(step(timedOut, { type: "frame", frame: goodSignature }, NOW), { state: timedOut, effects: [] });
  t.match(closed, { phase: "closed", reason: "link_lost", nodeId });
});

t.test("helpers", async (t) => {
  t.same(
    Object.entries(states).map(([name, s]) => [name, isOpen(s), heldNodeId(s) !== undefined]),
    [
      ["awaiting_hello", true, false],
      ["awaiting_proof", true, false],
      ["registering/admitting", true, false],
      ["registering/evicting", true, false],
      ["registering/wiring", true, false],
      ["registering/loading", true, true],
      ["registering/connecting", true, true],
      ["live", true, true],
      ["closing (before registering)", false, false],
      ["closing (was live)", false, false],
      ["closed", false, false],
    ],
  );
});
