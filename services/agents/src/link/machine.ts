import type { AgentFrame, BusMessage, MetricsSample, Response } from "@orch/contracts";
import type { AgentRow, AgentStatus, LinkUp } from "../db/agents.js";
import { parseIdentity, signatureValid, type ClaimedIdentity } from "./handshake.js";

/**
 * The life of one agent link as a pure transition function: `step(state, event, now)` returns the
 * next state and the effects the driver (session.ts) must perform, in order. Nothing here does I/O;
 * results of I/O come back as events. `R` is whatever the driver builds when the link is wired (the
 * hub entry, relay and bus bridge); the machine only carries it to the effects that need it.
 *
 *   awaiting_hello → awaiting_proof → registering → live → closing → closed
 *
 * Every open state goes to `closing` on a timeout, a stream end, an eviction or a close request;
 * `closing` runs the teardown once and becomes `closed` when it is done.
 */

export const MAX_QUEUED = 1000;
const MAX_ATTRIBUTES = 256;
const MAX_ATTRIBUTE_VALUE = 4096;
/** Ends after which the agent is still running its sessions elsewhere (or soon will be): they must not be failed. */
const AGENT_STILL_THERE = new Set(["replaced", "server_shutdown"]);

export type Refusal = { reason: string; message: string };
/** `joinToken` is a secret: it only reaches presence.admit, never a log line. */
export type Hello = { version: string; attributes: Record<string, string>; joinToken: string };
/** What the registry says about the agent: its approval and its operator-given name. */
export type Standing = { status: AgentStatus; name: string };

/** Fixed for the link's whole life. */
interface Base {
  session: string;
  /** The agent's address as this replica sees it. */
  address: string;
  /** This replica's name (recorded as the agent's holder). */
  replica: string;
}

/**
 * Registration, one I/O step at a time: `admitting` (registry lookup or first registration),
 * `evicting` (asking another replica to drop an older link), `wiring` (building the hub entry,
 * relay and bridge), `loading` (relay subscription and grants), `connecting` (marking it connected).
 * Frames that arrive meanwhile are queued and handled once live.
 */
export type Registering<R> = Base & { phase: "registering"; up: LinkUp; queued: AgentFrame[] } & (
    | { step: "admitting" }
    | { step: "evicting" | "wiring"; standing: Standing }
    | {
        step: "loading" | "connecting";
        standing: Standing;
        wiring: R;
        /**
         * A _Status notice came during these steps. The row that marking it connected returns may
         * have been read before that change (an approval right after "connected" showed), so the
         * registry is read again once live.
         */
        noticed?: boolean;
      }
  );

export type LinkState<R> =
  | (Base & { phase: "awaiting_hello"; nonce: Uint8Array })
  | (Base & { phase: "awaiting_proof"; nonce: Uint8Array; identity: ClaimedIdentity; hello: Hello })
  | Registering<R>
  | (Base & { phase: "live"; up: LinkUp; standing: Standing; wiring: R })
  | (Base & { phase: "closing" | "closed"; reason: string; nodeId?: string });

export type LinkEvent<R> =
  | { type: "frame"; frame: AgentFrame }
  | { type: "handshake_timeout" }
  /** The gRPC stream ended (`closed_by_agent`) or broke (`link_lost`). */
  | { type: "stream_end"; reason: "closed_by_agent" | "link_lost" }
  /** Asked from outside: the hub replacing it, a service shutdown. */
  | { type: "close"; reason: string; refusal?: Refusal }
  /** An _Evict notice: a newer link of this agent (session `by`) exists. */
  | { type: "evict"; by: string }
  /** A _Status notice, with the registry row read again (undefined: removed). */
  | { type: "status"; row: AgentRow | undefined }
  | { type: "admitted"; row: AgentRow }
  | { type: "evicted" }
  | { type: "wired"; wiring: R }
  | { type: "ready" }
  | { type: "connected"; row: AgentRow | undefined }
  /** A registration step threw. */
  | { type: "failed"; error: unknown }
  | { type: "torn_down" };

export type LogLevel = "debug" | "info" | "warn" | "error";

export type LinkEffect<R> =
  | { type: "send_challenge"; nonce: Uint8Array; nodeId: string }
  | { type: "admit"; up: LinkUp }
  | { type: "evict_elsewhere"; nodeId: string }
  /** Build the hub entry, relay and bridge; then report `wired`, and `ready` once routing is live. */
  | { type: "wire"; up: LinkUp; standing: Standing }
  | { type: "mark_connected"; up: LinkUp }
  /** Connected after the link closed: take the registry's "connected" back. */
  | { type: "undo_connected"; nodeId: string }
  | { type: "update_link"; wiring: R; standing: Standing }
  | { type: "welcome"; nodeId: string; standing: Standing }
  /** Read the registry row again and report it as a `status` event. */
  | { type: "reread_status"; nodeId: string }
  | { type: "stop_handshake_timer" }
  | { type: "store_attributes"; wiring: R; nodeId: string; attributes: Record<string, string> }
  | { type: "record_metrics"; nodeId: string; sample: MetricsSample }
  | { type: "resolve_response"; wiring: R; response: Response }
  | { type: "bus_publish"; wiring: R; message: BusMessage }
  | { type: "bus_subscribe"; wiring: R; subject: string }
  | { type: "bus_unsubscribe"; wiring: R; subject: string }
  | { type: "log"; level: LogLevel; fields: Record<string, unknown>; message: string }
  /**
   * Send the refusal (if any), end the stream, release the wiring and, for a link that was live,
   * record the disconnect; then report `torn_down`.
   */
  | {
      type: "teardown";
      reason: string;
      refusal?: Refusal;
      wiring?: R;
      /** Bus sessions of the agent are failed unless it is still running them elsewhere. */
      agentGone: boolean;
      /** Set when the registry shows this link connected. */
      recordDisconnect?: string;
    }
  /** Wiring that was built after the teardown ran. */
  | { type: "release"; wiring: R; agentGone: boolean };

export interface Transition<R> {
  state: LinkState<R>;
  effects: LinkEffect<R>[];
}

const REJECTED: Refusal = { reason: "agent_rejected", message: "this agent was rejected by an operator" };
const REMOVED: Refusal = { reason: "agent_removed", message: "the agent's record was removed" };

export function initialLinkState<R>(base: Base & { nonce: Uint8Array }): LinkState<R> {
  return { ...base, phase: "awaiting_hello" };
}

const baseOf = (s: Base): Base => ({ session: s.session, address: s.address, replica: s.replica });

export function cleanAttributes(a: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(a).slice(0, MAX_ATTRIBUTES))
    out[k.slice(0, 128)] = v.slice(0, MAX_ATTRIBUTE_VALUE);
  return out;
}

/** Frames may be written to the stream (the teardown writes its refusal itself). */
export const isOpen = (s: LinkState<unknown>) => s.phase !== "closing" && s.phase !== "closed";

/** The node id once registration started (for logs). */
export function nodeIdOf(s: LinkState<unknown>): string | undefined {
  if (s.phase === "registering" || s.phase === "live") return s.up.nodeId;
  if (s.phase === "closing" || s.phase === "closed") return s.nodeId;
  return undefined;
}

/** The node id when the link is in the hub and its relay subscribed, i.e. when a _Status notice applies. */
export function heldNodeId(s: LinkState<unknown>): string | undefined {
  if (s.phase === "live") return s.up.nodeId;
  if (s.phase === "registering" && (s.step === "loading" || s.step === "connecting")) return s.up.nodeId;
  return undefined;
}

/** The next state (possibly the same) and what to do, in order. */
const go = <R>(state: LinkState<R>, ...effects: LinkEffect<R>[]): Transition<R> => ({ state, effects });
const log = <R>(level: LogLevel, message: string, fields: Record<string, unknown> = {}): LinkEffect<R> => ({
  type: "log",
  level,
  fields,
  message,
});

/** Any open state → closing; the one place the teardown is asked for. */
function close<R>(
  s: LinkState<R>,
  reason: string,
  refusal?: Refusal,
  opts: { recordDisconnect?: boolean } = {},
): Transition<R> {
  const nodeId = nodeIdOf(s);
  const wiring = "wiring" in s ? s.wiring : undefined;
  const recordDisconnect = opts.recordDisconnect || s.phase === "live" ? nodeId : undefined;
  const teardown: LinkEffect<R> = { type: "teardown", reason, agentGone: !AGENT_STILL_THERE.has(reason) };
  if (refusal) teardown.refusal = refusal;
  if (wiring !== undefined) teardown.wiring = wiring;
  if (recordDisconnect !== undefined) teardown.recordDisconnect = recordDisconnect;
  const next: LinkState<R> = { ...baseOf(s), phase: "closing", reason };
  if (nodeId !== undefined) next.nodeId = nodeId;
  return { state: next, effects: [teardown] };
}

function onHello<R>(s: Extract<LinkState<R>, { phase: "awaiting_hello" }>, f: AgentFrame): Transition<R> {
  if (f.frame.case !== "hello")
    return close<R>(s, "protocol_error", { reason: "protocol_error", message: "the first frame must be hello" });
  const identity = parseIdentity(f.frame.value.publicKey);
  if (!identity)
    return close<R>(s, "invalid_public_key", {
      reason: "invalid_public_key",
      message: "public_key must be a hex Ed25519 key",
    });
  const hello = {
    version: f.frame.value.version,
    attributes: { ...f.frame.value.attributes },
    joinToken: f.frame.value.joinToken,
  };
  return go(
    { ...baseOf(s), phase: "awaiting_proof", nonce: s.nonce, identity, hello },
    { type: "send_challenge", nonce: s.nonce, nodeId: identity.nodeId },
  );
}

function onProof<R>(s: Extract<LinkState<R>, { phase: "awaiting_proof" }>, f: AgentFrame, now: number): Transition<R> {
  if (f.frame.case !== "signature")
    return close<R>(s, "protocol_error", { reason: "protocol_error", message: "expected the challenge signature" });
  if (!signatureValid(s.identity, s.nonce, f.frame.value.signature)) {
    const t = close<R>(s, "bad_signature", {
      reason: "bad_signature",
      message: "the signature does not match the public key",
    });
    return {
      state: t.state,
      effects: [log("warn", "agent handshake: bad signature", { node_id: s.identity.nodeId }), ...t.effects],
    };
  }
  const up: LinkUp = {
    nodeId: s.identity.nodeId,
    publicKey: s.identity.publicKeyHex,
    replica: s.replica,
    session: s.session,
    address: s.address,
    version: s.hello.version.slice(0, 64),
    attributes: cleanAttributes(s.hello.attributes),
    now,
  };
  // Bounded like the other hello fields; presence.admit judges it (a malformed one stays pending).
  if (s.hello.joinToken) up.joinToken = s.hello.joinToken.slice(0, 256);
  return go({ ...baseOf(s), phase: "registering", step: "admitting", up, queued: [] }, { type: "admit", up });
}

function liveFrame<R>(s: Extract<LinkState<R>, { phase: "live" }>, f: AgentFrame): LinkEffect<R> {
  const { wiring } = s;
  const nodeId = s.up.nodeId;
  switch (f.frame.case) {
    case "attributes":
      return { type: "store_attributes", wiring, nodeId, attributes: cleanAttributes(f.frame.value.values) };
    case "metrics":
      return { type: "record_metrics", nodeId, sample: f.frame.value };
    case "response":
      return { type: "resolve_response", wiring, response: f.frame.value };
    case "publish":
      return { type: "bus_publish", wiring, message: f.frame.value };
    case "subscribe":
      return { type: "bus_subscribe", wiring, subject: f.frame.value.subject };
    case "unsubscribe":
      return { type: "bus_unsubscribe", wiring, subject: f.frame.value.subject };
    default:
      return log("debug", "unexpected frame ignored", { frame: f.frame.case });
  }
}

function onFrame<R>(s: LinkState<R>, f: AgentFrame, now: number): Transition<R> {
  switch (s.phase) {
    case "awaiting_hello":
      return onHello(s, f);
    case "awaiting_proof":
      return onProof(s, f, now);
    case "registering":
      // Bounded: an agent that floods before it is admitted loses the excess, not the server's memory.
      return go(s.queued.length < MAX_QUEUED ? { ...s, queued: [...s.queued, f] } : s);
    case "live":
      return go(s, liveFrame(s, f));
    default:
      return go(s);
  }
}

/** Registration steps: each result moves one step on, unless the link closed meanwhile. */
function onAdmitted<R>(s: LinkState<R>, row: AgentRow): Transition<R> {
  if (s.phase !== "registering" || s.step !== "admitting") return go(s);
  if (row.status === "rejected") return close<R>(s, "rejected", REJECTED);
  const standing = { status: row.status, name: row.name ?? "" };
  // Only a row still marked connected can have another holder (a half-dead older link).
  if (row.connected) return go({ ...s, step: "evicting", standing }, { type: "evict_elsewhere", nodeId: s.up.nodeId });
  return go({ ...s, step: "wiring", standing }, { type: "wire", up: s.up, standing });
}

function onEvicted<R>(s: LinkState<R>): Transition<R> {
  if (s.phase !== "registering" || s.step !== "evicting") return go(s);
  return go({ ...s, step: "wiring" }, { type: "wire", up: s.up, standing: s.standing });
}

function onWired<R>(s: LinkState<R>, wiring: R): Transition<R> {
  if (s.phase === "registering" && s.step === "wiring") return go({ ...s, step: "loading", wiring });
  if (!isOpen(s)) {
    const reason = s.phase === "closing" || s.phase === "closed" ? s.reason : "";
    return go(s, { type: "release", wiring, agentGone: !AGENT_STILL_THERE.has(reason) });
  }
  return go(s);
}

function onReady<R>(s: LinkState<R>): Transition<R> {
  if (s.phase !== "registering" || s.step !== "loading") return go(s);
  // Routing is live before the registry says "connected", so a caller who sees connected can reach it.
  return go({ ...s, step: "connecting" }, { type: "mark_connected", up: s.up });
}

function onConnected<R>(s: LinkState<R>, row: AgentRow | undefined): Transition<R> {
  if (s.phase === "closing" || s.phase === "closed")
    // Closed while the row was being written: the teardown saw the link as not yet up.
    return go(s, { type: "undo_connected", nodeId: nodeIdOf(s) ?? "" });
  if (s.phase !== "registering" || s.step !== "connecting") return go(s);
  if (!row) return close<R>(s, "removed", REMOVED);
  // Rejected while this handshake was in flight; the _Status notice found no link to close yet.
  if (row.status === "rejected") return close<R>(s, "rejected", REJECTED, { recordDisconnect: true });
  const standing = { status: row.status, name: row.name ?? "" };
  const live: LinkState<R> = { ...baseOf(s), phase: "live", up: s.up, standing, wiring: s.wiring };
  return go(
    live,
    { type: "update_link", wiring: s.wiring, standing },
    { type: "stop_handshake_timer" },
    { type: "welcome", nodeId: s.up.nodeId, standing },
    log("info", "agent link up", { status: standing.status }),
    ...s.queued.map((f) => liveFrame(live, f)),
    ...(s.noticed ? [{ type: "reread_status" as const, nodeId: s.up.nodeId }] : []),
  );
}

function onStatus<R>(s: LinkState<R>, row: AgentRow | undefined): Transition<R> {
  if (s.phase !== "live" && !(s.phase === "registering" && (s.step === "loading" || s.step === "connecting")))
    return go(s);
  if (!row) return close<R>(s, "removed", REMOVED);
  if (row.status === "rejected") return close<R>(s, "rejected", REJECTED);
  const standing = { status: row.status, name: row.name ?? "" };
  const noticed = s.phase === "registering" ? { noticed: true } : {};
  if (standing.status === s.standing.status && standing.name === s.standing.name)
    return go(s.phase === "registering" ? { ...s, noticed: true } : s);
  return go(
    { ...s, standing, ...noticed },
    { type: "update_link", wiring: s.wiring, standing },
    { type: "welcome", nodeId: s.up.nodeId, standing },
  );
}

export function step<R>(s: LinkState<R>, e: LinkEvent<R>, now: number): Transition<R> {
  switch (e.type) {
    case "frame":
      return onFrame(s, e.frame, now);
    case "admitted":
      return onAdmitted(s, e.row);
    case "evicted":
      return onEvicted(s);
    case "wired":
      return onWired(s, e.wiring);
    case "ready":
      return onReady(s);
    case "connected":
      return onConnected(s, e.row);
    case "status":
      return onStatus(s, e.row);
    case "torn_down":
      return s.phase === "closing" ? go({ ...s, phase: "closed" }) : go(s);
  }
  // The rest close an open link and are no-ops once it is closing.
  if (!isOpen(s)) {
    if (e.type === "failed") return go(s, log("error", "agent admission failed", { err: e.error }));
    return go(s);
  }
  switch (e.type) {
    case "handshake_timeout":
      if (s.phase === "live") return go(s);
      return close<R>(s, "handshake_timeout", {
        reason: "handshake_timeout",
        message: "the handshake did not complete in time",
      });
    case "stream_end":
      return close<R>(s, e.reason);
    case "close":
      return close<R>(s, e.reason, e.refusal);
    case "evict":
      return e.by === s.session ? go(s) : close<R>(s, "replaced");
    case "failed": {
      const t = close<R>(s, "internal_error", {
        reason: "server_error",
        message: "the server could not admit the agent; retry later",
      });
      return { state: t.state, effects: [log("error", "agent admission failed", { err: e.error }), ...t.effects] };
    }
  }
}
