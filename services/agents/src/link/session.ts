import type { ServerDuplexStream } from "@grpc/grpc-js";
import type { Msg, NatsConnection } from "@nats-io/transport-node";
import type { AgentFrame, ServerFrame } from "@orch/contracts";
import { createStepper, type Clock, type IdGenerator, type Logger, type Pool, type Stepper } from "@orch/kit";
import { agentsDb, type LinkUp } from "../db/agents.js";
import type { MetricsWriter } from "../metrics-writer.js";
import { createBusBridge, type BusBridge } from "./bus-bridge.js";
import { createLinkGrants, grantOnRelay } from "./grants.js";
import { newNonce } from "./handshake.js";
import type { HeldLink, Hub } from "./hub.js";
import {
  heldNodeId,
  initialLinkState,
  isOpen,
  nodeIdOf,
  step,
  type LinkEffect,
  type LinkEvent,
  type LinkState,
  type Standing,
} from "./machine.js";
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

/** What a link holds once wired: its hub entry, request relay and bus bridge. */
interface Wiring {
  link: HeldLink;
  relay: Relay;
  bridge: BusBridge;
  /** Attribute updates are written in arrival order. */
  attributesWrite: Promise<void>;
}

type Event = LinkEvent<Wiring>;
type Effect = LinkEffect<Wiring>;

/** "1.2.3.4:5678", "::1:5678", "::ffff:1.2.3.4:5678" → the host part. */
export function peerHost(peer: string): string {
  const host = /:\d+$/.test(peer) && peer !== "unknown" ? peer.slice(0, peer.lastIndexOf(":")) : peer;
  return host.replace(/^::ffff:/, "").replace(/^\[(.*)\]$/, "$1");
}

/**
 * One agent link from Hello to close: the signed handshake (docs/agents.md), then attributes,
 * metrics, relayed requests and bus traffic. The decisions are made by the state machine in
 * machine.ts; this driver feeds it the stream's frames and the results of I/O, and performs the
 * effects it returns.
 */
export function acceptLink(call: LinkCall, deps: LinkDeps): void {
  new LinkDriver(call, deps);
}

class LinkDriver {
  private readonly machine: Stepper<LinkState<Wiring>, Event>;
  private readonly session: string;
  private readonly baseLog: Logger;
  private readonly handshakeTimer: NodeJS.Timeout;
  /** Settles once the teardown is done (what `HeldLink.close` and the service wait for). */
  private readonly closed: Promise<void>;
  private markClosed!: () => void;

  constructor(
    private readonly call: LinkCall,
    private readonly deps: LinkDeps,
  ) {
    this.session = deps.ids.next();
    const address = peerHost(call.getPeer());
    this.baseLog = deps.log.child({ session: this.session, address });
    this.machine = createStepper(
      initialLinkState({ session: this.session, address, replica: deps.replica, nonce: newNonce() }),
      (s: LinkState<Wiring>, e: Event) => step(s, e, deps.clock.now()),
      (f) => this.perform(f),
    );
    this.closed = new Promise((resolve) => {
      this.markClosed = resolve;
    });
    this.handshakeTimer = setTimeout(() => void this.dispatch({ type: "handshake_timeout" }), deps.handshakeTimeoutMs);
    this.handshakeTimer.unref();

    call.on("data", (frame: AgentFrame) => void this.dispatch({ type: "frame", frame }));
    // A dying peer's stream also ends, and is cancelled a moment later: only an end without the
    // cancel is the agent closing cleanly.
    call.on("end", () =>
      setTimeout(
        () => void this.dispatch({ type: "stream_end", reason: call.cancelled ? "link_lost" : "closed_by_agent" }),
        100,
      ).unref(),
    );
    call.on("cancelled", () => void this.dispatch({ type: "stream_end", reason: "link_lost" }));
    call.on("error", (err: Error) => {
      this.log().debug({ err: err.message }, "agent link error");
      void this.dispatch({ type: "stream_end", reason: "link_lost" });
    });
  }

  private log(): Logger {
    const nodeId = nodeIdOf(this.state);
    return nodeId ? this.baseLog.child({ node_id: nodeId }) : this.baseLog;
  }

  private get state(): LinkState<Wiring> {
    return this.machine.state;
  }

  /** Resolves at once, or when the teardown is done if the link is closing. */
  private dispatch(event: Event): Promise<void> {
    this.machine.dispatch(event);
    return isOpen(this.state) ? Promise.resolve() : this.closed;
  }

  /** Runs a registration step; its result, or its failure, comes back as an event. */
  private later(work: Promise<Event>): void {
    // A step that throws while its result is applied (building the wiring, say) fails the admission too.
    void work.then((e) => this.dispatch(e)).catch((error: unknown) => this.dispatch({ type: "failed", error }));
  }

  private send = (init: Parameters<typeof serverFrame>[0]) => {
    if (!isOpen(this.state)) return;
    try {
      this.call.write(serverFrame(init));
    } catch (err) {
      this.log().debug({ err: (err as Error).message }, "write to a closing link failed");
    }
  };

  private perform(e: Effect): void {
    const { deps } = this;
    switch (e.type) {
      case "send_challenge":
        this.send({ frame: { case: "challenge", value: { nonce: e.nonce, nodeId: e.nodeId } } });
        break;
      case "admit":
        this.later(deps.presence.admit(e.up).then((row) => ({ type: "admitted", row })));
        break;
      case "evict_elsewhere":
        this.later(this.evictElsewhere(e.nodeId).then(() => ({ type: "evicted" })));
        break;
      case "wire":
        this.wire(e.up, e.standing);
        break;
      case "mark_connected":
        this.later(
          deps.presence.connected({ ...e.up, now: deps.clock.now() }).then((row) => ({ type: "connected", row })),
        );
        break;
      case "undo_connected":
        void deps.presence.disconnected(e.nodeId, this.session, deps.clock.now(), "link_lost").catch(() => undefined);
        break;
      case "reread_status":
        this.later(agentsDb.byNodeId(deps.pool, e.nodeId).then((row) => ({ type: "status", row })));
        break;
      case "update_link":
        e.wiring.link.status = e.standing.status;
        e.wiring.link.name = e.standing.name;
        break;
      case "welcome":
        this.send({
          frame: {
            case: "welcome",
            value: {
              nodeId: e.nodeId,
              status: e.standing.status,
              name: e.standing.name,
              metricsIntervalSeconds: deps.metricsIntervalSeconds,
            },
          },
        });
        break;
      case "stop_handshake_timer":
        clearTimeout(this.handshakeTimer);
        break;
      case "store_attributes": {
        const { wiring, nodeId, attributes } = e;
        wiring.link.up.attributes = attributes;
        wiring.attributesWrite = wiring.attributesWrite
          .then(() => agentsDb.setAttributes(deps.pool, nodeId, this.session, attributes, deps.clock.now()))
          .catch((err) => this.log().warn({ err: (err as Error).message }, "attributes not stored"));
        break;
      }
      case "record_metrics":
        deps.metrics.add(e.nodeId, e.sample);
        break;
      case "resolve_response":
        e.wiring.relay.resolve(e.response);
        break;
      case "bus_publish":
        e.wiring.bridge.publish(e.message);
        break;
      case "bus_subscribe":
        e.wiring.bridge.subscribe(e.subject);
        break;
      case "bus_unsubscribe":
        e.wiring.bridge.unsubscribe(e.subject);
        break;
      case "log":
        this.log()[e.level](e.fields, e.message);
        break;
      case "teardown":
        this.teardown(e);
        break;
      case "release":
        this.release(e.wiring, e.agentGone);
        break;
    }
  }

  /** Asks whichever replica may still hold an older link of this agent to drop it. */
  private async evictElsewhere(nodeId: string) {
    await this.deps.nc
      .request(`${agentSubject(nodeId)}.${INTERNAL.evict}`, new TextEncoder().encode(this.session), { timeout: 1000 })
      .catch(() => undefined);
  }

  private wire(up: LinkUp, standing: Standing) {
    const { deps } = this;
    const log = this.log();
    // A copy: attribute frames update the hub's view, not the machine's registration record.
    const held: HeldLink = {
      up: { ...up },
      status: standing.status,
      name: standing.name,
      close: (reason, refusal) =>
        this.dispatch(refusal ? { type: "close", reason, refusal } : { type: "close", reason }),
    };
    const replaced = deps.hub.add(held);
    if (replaced) void replaced.close("replaced");
    const grants = createLinkGrants({ pool: deps.pool, nodeId: up.nodeId, clock: deps.clock, log });
    const bridge = createBusBridge({ nc: deps.nc, send: this.send, grants, log });
    const observe = grantOnRelay(grants, {
      terminalMs: deps.terminalGrantMs,
      clock: deps.clock,
      log,
      withdrawn: (g) => bridge.withdraw(g),
    });
    let rechecking: Promise<boolean> | undefined;
    const relay = createRelay({
      nc: deps.nc,
      nodeId: up.nodeId,
      send: this.send,
      approved: () => held.status === "approved",
      // One registry read at a time, however many requests a lagging standing turns away.
      recheck: () =>
        (rechecking ??= this.rereadStatus()
          .then(() => held.status === "approved")
          .finally(() => {
            rechecking = undefined;
          })),
      internal: (method, msg) => this.internal(method, msg),
      observe,
      log,
    });
    void this.dispatch({ type: "wired", wiring: { link: held, relay, bridge, attributesWrite: Promise.resolve() } });
    // Grants made through other replicas come with the link (a miss still asks the database).
    const loaded = grants
      .load()
      .catch((err) => log.warn({ err: (err as Error).message }, "link grants not loaded; looking them up one by one"));
    this.later(Promise.all([relay.ready, loaded]).then(() => ({ type: "ready" })));
  }

  private async internal(method: string, msg: Msg): Promise<void> {
    if (method === INTERNAL.evict) {
      await this.dispatch({ type: "evict", by: new TextDecoder().decode(msg.data) });
    } else if (method === INTERNAL.status) {
      await this.rereadStatus();
    }
    if (msg.reply) msg.respond(new Uint8Array());
  }

  /** Feeds the registry's current row to the machine (a _Status notice, or a relay's recheck). */
  private async rereadStatus(): Promise<void> {
    const nodeId = heldNodeId(this.state);
    if (nodeId) await this.dispatch({ type: "status", row: await agentsDb.byNodeId(this.deps.pool, nodeId) });
  }

  private release(wiring: Wiring, agentGone: boolean) {
    wiring.relay.stop();
    wiring.bridge.stop({ agentGone });
    this.deps.hub.remove(wiring.link);
  }

  private teardown(e: Extract<Effect, { type: "teardown" }>) {
    const { deps, call } = this;
    const log = this.log();
    clearTimeout(this.handshakeTimer);
    const done = (async () => {
      try {
        if (e.refusal) call.write(serverFrame({ frame: { case: "refusal", value: e.refusal } }));
        call.end();
      } catch {
        /* the transport is already gone */
      }
      if (e.wiring) this.release(e.wiring, e.agentGone);
      if (e.recordDisconnect) {
        await deps.presence
          .disconnected(e.recordDisconnect, this.session, deps.clock.now(), e.reason, !e.agentGone)
          .catch((err) => log.error({ err }, "could not record the disconnect"));
      }
      if (e.refusal) log.info({ reason: e.refusal.reason }, "agent link refused");
      else log.info({ reason: e.reason }, "agent link closed");
    })();
    deps.track(done);
    void done.then(() => {
      void this.dispatch({ type: "torn_down" });
      this.markClosed();
    });
  }
}
