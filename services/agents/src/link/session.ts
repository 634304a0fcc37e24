import type { ServerDuplexStream } from "@grpc/grpc-js";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import type { AgentFrame, ServerFrame } from "@orch/contracts";
import type { Clock, IdGenerator, Logger, Pool } from "@orch/kit";
import { agentsDb, type LinkUp } from "../db.js";
import type { MetricsWriter } from "../metrics-writer.js";
import { createBusBridge, type BusBridge } from "./bus-bridge.js";
import { createLinkGrants, grantOnRelay } from "./grants.js";
import { newNonce, parseIdentity, signatureValid, type ClaimedIdentity } from "./handshake.js";
import type { HeldLink, Hub } from "./hub.js";
import type { Presence } from "./presence.js";
import { INTERNAL, agentSubject, createRelay, serverFrame, type Relay } from "./relay.js";

export type LinkCall = ServerDuplexStream<AgentFrame, ServerFrame>;

export interface LinkDeps {
  nc: NatsConnection;
  pool: Pool;
  presence: Presence;
  hub: Hub;
  metrics: MetricsWriter;
  log: Logger;
  clock: Clock;
  ids: IdGenerator;
  replica: string;
  metricsIntervalSeconds: number;
  handshakeTimeoutMs: number;
  /** How long a terminal session's bus grant lasts (agents.terminal_grant_hours). */
  terminalGrantMs: number;
  /** Lets the service wait for links that are still cleaning up when it stops. */
  track(p: Promise<unknown>): void;
}

type Refusal = { reason: string; message: string };

const MAX_ATTRIBUTES = 256;
const MAX_ATTRIBUTE_VALUE = 4096;
const MAX_QUEUED = 1000;
/** Ends after which the agent is still running its sessions elsewhere (or soon will be): they must not be failed. */
const AGENT_STILL_THERE = new Set(["replaced", "server_shutdown"]);

/** "1.2.3.4:5678", "::1:5678", "::ffff:1.2.3.4:5678" → the host part. */
export function peerHost(peer: string): string {
  const host = /:\d+$/.test(peer) && peer !== "unknown" ? peer.slice(0, peer.lastIndexOf(":")) : peer;
  return host.replace(/^::ffff:/, "").replace(/^\[(.*)\]$/, "$1");
}

function cleanAttributes(a: Record<string, string>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(a).slice(0, MAX_ATTRIBUTES))
    out[k.slice(0, 128)] = v.slice(0, MAX_ATTRIBUTE_VALUE);
  return out;
}

/**
 * One agent link from Hello to close: the signed handshake of DESIGN §6, then attributes, metrics,
 * relayed requests and bus traffic. Every exit path goes through `finish`, which runs once.
 */
export function acceptLink(call: LinkCall, deps: LinkDeps): void {
  const session = deps.ids.next();
  const address = peerHost(call.getPeer());
  let log = deps.log.child({ session, address });
  let phase: "hello" | "signature" | "admitting" | "up" | "closed" = "hello";
  let identity: ClaimedIdentity | undefined;
  let nonce: Buffer | undefined;
  let pendingHello: { version: string; attributes: Record<string, string> } | undefined;
  let up: LinkUp | undefined;
  let relay: Relay | undefined;
  let bridge: BusBridge | undefined;
  let link: HeldLink | undefined;
  let closing: Promise<void> | undefined;
  let attributesWrite: Promise<void> = Promise.resolve();
  const queued: AgentFrame[] = [];

  const send = (init: Parameters<typeof serverFrame>[0]) => {
    if (phase === "closed") return;
    try {
      call.write(serverFrame(init));
    } catch (err) {
      log.debug({ err: (err as Error).message }, "write to a closing link failed");
    }
  };

  const handshakeTimer = setTimeout(
    () =>
      void finish("handshake_timeout", {
        reason: "handshake_timeout",
        message: "the handshake did not complete in time",
      }),
    deps.handshakeTimeoutMs,
  );
  handshakeTimer.unref();

  function finish(reason: string, refusal?: Refusal): Promise<void> {
    if (closing) return closing;
    const wasUp = phase === "up";
    phase = "closed";
    clearTimeout(handshakeTimer);
    closing = (async () => {
      try {
        if (refusal) call.write(serverFrame({ frame: { case: "refusal", value: refusal } }));
        call.end();
      } catch {
        /* the transport is already gone */
      }
      relay?.stop();
      bridge?.stop({ agentGone: !AGENT_STILL_THERE.has(reason) });
      if (link) deps.hub.remove(link);
      if (wasUp && up) {
        await deps.presence
          .disconnected(up.nodeId, session, deps.clock.now(), reason)
          .catch((err) => log.error({ err }, "could not record the disconnect"));
      }
      if (refusal) log.info({ reason: refusal.reason }, "agent link refused");
      else log.info({ reason }, "agent link closed");
    })();
    deps.track(closing);
    return closing;
  }

  async function internal(method: string, msg: Msg): Promise<void> {
    if (method === INTERNAL.evict) {
      if (new TextDecoder().decode(msg.data) !== session) await finish("replaced");
    } else if (method === INTERNAL.status && link && up) {
      const row = await agentsDb.byNodeId(deps.pool, up.nodeId);
      if (!row) await finish("removed", { reason: "agent_removed", message: "the agent's record was removed" });
      else if (row.status === "rejected")
        await finish("rejected", { reason: "agent_rejected", message: "this agent was rejected by an operator" });
      else if (row.status !== link.status || (row.name ?? "") !== link.name) {
        link.status = row.status;
        link.name = row.name ?? "";
        welcome();
      }
    }
    if (msg.reply) msg.respond(new Uint8Array());
  }

  function welcome() {
    if (!link) return;
    send({
      frame: {
        case: "welcome",
        value: {
          nodeId: link.up.nodeId,
          status: link.status,
          name: link.name,
          metricsIntervalSeconds: deps.metricsIntervalSeconds,
        },
      },
    });
  }

  /** Asks whichever replica may still hold an older link of this agent to drop it. */
  async function evictElsewhere(nodeId: string) {
    await deps.nc
      .request(`${agentSubject(nodeId)}.${INTERNAL.evict}`, new TextEncoder().encode(session), { timeout: 1000 })
      .catch(() => undefined);
  }

  async function admit(id: ClaimedIdentity, hello: { version: string; attributes: Record<string, string> }) {
    phase = "admitting";
    log = log.child({ node_id: id.nodeId });
    const linkUp: LinkUp = {
      nodeId: id.nodeId,
      publicKey: id.publicKeyHex,
      replica: deps.replica,
      session,
      address,
      version: hello.version.slice(0, 64),
      attributes: cleanAttributes(hello.attributes),
      now: deps.clock.now(),
    };
    up = linkUp;
    const row = await deps.presence.admit(linkUp);
    if (phase !== "admitting") return;
    if (row.status === "rejected") {
      await finish("rejected", { reason: "agent_rejected", message: "this agent was rejected by an operator" });
      return;
    }
    // Only a row still marked connected can have another holder (a half-dead older link).
    if (row.connected) {
      await evictElsewhere(id.nodeId);
      if (phase !== "admitting") return;
    }
    const held: HeldLink = {
      up: linkUp,
      status: row.status,
      name: row.name ?? "",
      close: (reason, refusal) => finish(reason, refusal),
    };
    link = held;
    const replaced = deps.hub.add(held);
    if (replaced) void replaced.close("replaced");
    const grants = createLinkGrants({ pool: deps.pool, nodeId: id.nodeId, clock: deps.clock, log });
    const busBridge = createBusBridge({ nc: deps.nc, send, grants, log });
    bridge = busBridge;
    const observe = grantOnRelay(grants, {
      terminalMs: deps.terminalGrantMs,
      clock: deps.clock,
      log,
      withdrawn: (g) => busBridge.withdraw(g),
    });
    relay = createRelay({
      nc: deps.nc,
      nodeId: id.nodeId,
      send,
      approved: () => held.status === "approved",
      internal,
      observe,
      log,
    });
    // Grants made through other replicas come with the link (a miss still asks the database).
    const loaded = grants
      .load()
      .catch((err) => log.warn({ err: (err as Error).message }, "link grants not loaded; looking them up one by one"));
    await Promise.all([relay.ready, loaded]);
    if (phase !== "admitting") return;
    // Routing is live before the registry says "connected", so a caller who sees connected can reach it.
    const connected = await deps.presence.connected({ ...linkUp, now: deps.clock.now() });
    if (phase !== "admitting") {
      // Closed while the row was being written: undo it (finish saw the link as not yet up).
      await deps.presence.disconnected(id.nodeId, session, deps.clock.now(), "link_lost").catch(() => undefined);
      return;
    }
    if (!connected) {
      await finish("removed", { reason: "agent_removed", message: "the agent's record was removed" });
      return;
    }
    if (connected.status === "rejected") {
      // Rejected while this handshake was in flight; the _Status notice found no link to close yet.
      phase = "up";
      await finish("rejected", { reason: "agent_rejected", message: "this agent was rejected by an operator" });
      return;
    }
    held.status = connected.status;
    held.name = connected.name ?? "";
    phase = "up";
    clearTimeout(handshakeTimer);
    welcome();
    log.info({ status: held.status }, "agent link up");
    for (const f of queued.splice(0)) onUpFrame(f);
  }

  function onUpFrame(f: AgentFrame) {
    const nodeId = up!.nodeId;
    switch (f.frame.case) {
      case "attributes": {
        const attrs = cleanAttributes(f.frame.value.values);
        up!.attributes = attrs;
        attributesWrite = attributesWrite
          .then(() => agentsDb.setAttributes(deps.pool, nodeId, session, attrs, deps.clock.now()))
          .catch((err) => log.warn({ err: (err as Error).message }, "attributes not stored"));
        break;
      }
      case "metrics":
        deps.metrics.add(nodeId, f.frame.value);
        break;
      case "response":
        relay!.resolve(f.frame.value);
        break;
      case "publish":
        bridge!.publish(f.frame.value);
        break;
      case "subscribe":
        bridge!.subscribe(f.frame.value.subject);
        break;
      case "unsubscribe":
        bridge!.unsubscribe(f.frame.value.subject);
        break;
      default:
        log.debug({ frame: f.frame.case }, "unexpected frame ignored");
    }
  }

  function onFrame(f: AgentFrame) {
    switch (phase) {
      case "hello": {
        if (f.frame.case !== "hello")
          return void finish("protocol_error", { reason: "protocol_error", message: "the first frame must be hello" });
        identity = parseIdentity(f.frame.value.publicKey);
        if (!identity)
          return void finish("invalid_public_key", {
            reason: "invalid_public_key",
            message: "public_key must be a hex Ed25519 key",
          });
        const hello = { version: f.frame.value.version, attributes: { ...f.frame.value.attributes } };
        nonce = newNonce();
        phase = "signature";
        pendingHello = hello;
        send({ frame: { case: "challenge", value: { nonce, nodeId: identity.nodeId } } });
        return;
      }
      case "signature": {
        if (f.frame.case !== "signature")
          return void finish("protocol_error", {
            reason: "protocol_error",
            message: "expected the challenge signature",
          });
        if (!signatureValid(identity!, nonce!, f.frame.value.signature)) {
          log.warn({ node_id: identity!.nodeId }, "agent handshake: bad signature");
          return void finish("bad_signature", {
            reason: "bad_signature",
            message: "the signature does not match the public key",
          });
        }
        void admit(identity!, pendingHello!).catch((err) => {
          log.error({ err }, "agent admission failed");
          void finish("internal_error", {
            reason: "server_error",
            message: "the server could not admit the agent; retry later",
          });
        });
        return;
      }
      case "admitting":
        if (queued.length < MAX_QUEUED) queued.push(f);
        return;
      case "up":
        return onUpFrame(f);
      case "closed":
        return;
    }
  }
  call.on("data", onFrame);
  // A dying peer's stream also ends, and is cancelled a moment later: only an end without the
  // cancel is the agent closing cleanly.
  call.on("end", () => setTimeout(() => void finish(call.cancelled ? "link_lost" : "closed_by_agent"), 100).unref());
  call.on("cancelled", () => void finish("link_lost"));
  call.on("error", (err: Error) => {
    log.debug({ err: err.message }, "agent link error");
    void finish("link_lost");
  });
}
