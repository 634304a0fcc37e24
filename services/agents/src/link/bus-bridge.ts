import type { MessageInitShape } from "@bufbuild/protobuf";
import type { NatsConnection, Subscription } from "@nats-io/transport-node";
import type { BusMessage, ServerFrameSchema } from "@orch/contracts";
import type { Logger } from "@orch/kit";
import { grantFor, type Grant, type LinkGrants } from "./grants.js";

export interface BusBridge {
  publish(m: BusMessage): void;
  subscribe(subject: string): void;
  unsubscribe(subject: string): void;
  /** Drops the subscriptions a grant that was never confirmed (a failed open) let the agent make. */
  withdraw(g: Grant): void;
  /**
   * Drops every subscription the agent made. With `agentGone`, each terminal session the agent was
   * subscribed to hears that its agent is gone, so its recorder fails it at once rather than
   * after its silence timeout.
   */
  stop(opts?: { agentGone?: boolean }): void;
}

type Direction = "publish" | "subscribe";

/** Same shape as the agent's own exit message (agent/src/terminal/control.ts, docs/terminal.md). */
export const AGENT_GONE_EXIT = Buffer.from(
  JSON.stringify({ type: "exit", code: -1, signal: 0, reason: "agent_disconnected" }),
);

const TERM_SUB_RE = /^orch\.term\.([0-9A-Za-z]+)\.(?:in|ctl)$/;
/** One warning per refused subject in this window; repeats go to debug (a flooding agent must not flood the log). */
const WARN_EVERY_MS = 10_000;

/**
 * Lets an agent publish and subscribe on the bus through its link, only on the subjects the
 * contracts allow (terminal streams, state progress) AND only for the sessions and operations that
 * were opened on this agent (grants.ts): an agent never sees or forges another agent's traffic.
 * Frames keep their order even when a grant has to be looked up in the database.
 */
export function createBusBridge(opts: {
  nc: NatsConnection;
  send(frame: MessageInitShape<typeof ServerFrameSchema>): void;
  grants: LinkGrants;
  log: Logger;
  maxSubscriptions?: number;
  /** Frames waiting behind a grant lookup; more are dropped. */
  maxQueued?: number;
}): BusBridge {
  const { log } = opts;
  const subs = new Map<string, Subscription>();
  const max = opts.maxSubscriptions ?? 256;
  const maxQueued = opts.maxQueued ?? 4096;
  const warned = new Map<string, number>();
  let tail: Promise<void> = Promise.resolve();
  let queued = 0;
  let stopped = false;

  // node_id is bound on the link's logger; payloads are never logged.
  const refuse = (direction: Direction, subject: string, why: string) => {
    const now = Date.now();
    if ((warned.get(subject) ?? 0) > now)
      return log.debug({ subject, direction }, `agent ${direction} refused: ${why}`);
    if (warned.size >= 1024) warned.clear();
    warned.set(subject, now + WARN_EVERY_MS);
    log.warn({ subject, direction }, `agent ${direction} refused: ${why}`);
  };

  const enqueue = (step: () => void | Promise<void>) => {
    if (queued >= maxQueued) {
      log.warn({ queued }, "agent bus frame dropped: too many waiting for a grant lookup");
      return;
    }
    queued++;
    tail = tail
      .then(step)
      .catch((err: unknown) => log.warn({ err: (err as Error).message }, "agent bus frame failed"))
      .then(() => void queued--);
  };

  /** Runs `run` if the agent holds the grant `subject` needs, in frame order. */
  const guarded = (direction: Direction, subject: string, run: () => void) => {
    const g = grantFor(subject, direction);
    if (!g) return refuse(direction, subject, "subject not allowed");
    const decide = (ok: boolean) => {
      if (stopped) return;
      if (ok) run();
      else refuse(direction, subject, "not granted to this agent");
    };
    if (queued === 0) {
      const ok = opts.grants.allows(g);
      if (typeof ok === "boolean") return decide(ok);
      return enqueue(() => ok.then(decide));
    }
    enqueue(async () => decide(await opts.grants.allows(g)));
  };

  const drop = (subject: string) => {
    subs.get(subject)?.unsubscribe();
    subs.delete(subject);
  };

  return {
    publish(m) {
      guarded("publish", m.subject, () => opts.nc.publish(m.subject, m.data));
    },
    subscribe(subject) {
      guarded("subscribe", subject, () => {
        if (subs.has(subject)) return;
        if (subs.size >= max) {
          log.warn({ subject, max }, "agent subscribe refused: too many subscriptions");
          return;
        }
        subs.set(
          subject,
          opts.nc.subscribe(subject, {
            callback: (err, msg) => {
              if (!err) opts.send({ frame: { case: "message", value: { subject: msg.subject, data: msg.data } } });
            },
          }),
        );
      });
    },
    unsubscribe(subject) {
      // Behind a pending subscribe of the same subject, or it would be undone by it.
      if (queued === 0) drop(subject);
      else enqueue(() => drop(subject));
    },
    withdraw(g) {
      for (const subject of [...subs.keys()]) {
        const need = grantFor(subject, "subscribe");
        if (need?.kind === g.kind && need.ref === g.ref) drop(subject);
      }
    },
    stop(stopOpts = {}) {
      if (stopped) return;
      stopped = true;
      const sessions = new Set<string>();
      for (const subject of subs.keys()) {
        const m = TERM_SUB_RE.exec(subject);
        if (m) sessions.add(m[1]!);
      }
      for (const s of subs.values()) s.unsubscribe();
      subs.clear();
      if (!stopOpts.agentGone) return;
      for (const id of sessions) opts.nc.publish(`orch.term.${id}.ctl`, AGENT_GONE_EXIT);
      if (sessions.size) log.info({ sessions: sessions.size }, "terminal sessions told their agent is gone");
    },
  };
}
