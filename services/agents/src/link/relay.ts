import { create, type MessageInitShape } from "@bufbuild/protobuf";
import type { Msg, NatsConnection, Subscription } from "@nats-io/transport-node";
import { isErrorReason, ServerFrameSchema, type Response } from "@orch/contracts";
import { H, OrchError, encodeError, isCode, type Logger } from "@orch/kit";
import { bulkMoved } from "@orch/kit/bulk-pacer";
import { startRelaySpan, type RelaySpan } from "./relay-trace.js";

type ServerFrameInit = MessageInitShape<typeof ServerFrameSchema>;

export const agentSubject = (nodeId: string) => `orch.agent.${nodeId}`;

/** Methods the holding replica answers itself (names start with `_`, so no proto method collides). */
export const INTERNAL = {
  /** Re-read the registry row and tell the agent its (new) approval status. */
  status: "_Status",
  /** A newer link for this agent exists elsewhere (payload: its session id); drop this one. */
  evict: "_Evict",
} as const;

/**
 * Sees each request relayed to the agent (after the approval and capacity checks); may return a
 * completion that is told whether the agent answered successfully (false for an error, a timeout or
 * a dropped link). A successful answer reaches the caller once the completion has settled.
 */
export type RelayObserver = (
  method: string,
  payload: Uint8Array,
  deadline: number,
) => ((ok: boolean) => void | Promise<void>) | undefined;

export interface RelayOptions {
  nc: NatsConnection;
  nodeId: string;
  send(frame: ServerFrameInit): void;
  /** Requests are relayed only while this says the agent is approved. */
  approved(): boolean;
  /**
   * Asked when approved() says no, before a request is refused: reads the registry again and
   * resolves to the fresh answer. The link's standing can trail an approval its caller has already
   * seen committed (the _Status notice still on its way, or lost to a timeout on a busy machine);
   * the registry, not the link, is the record.
   */
  recheck?(): Promise<boolean>;
  internal(method: string, msg: Msg): Promise<void>;
  observe?: RelayObserver;
  log: Logger;
  maxPending?: number;
  /** Used when a request carries no orch-deadline header. */
  defaultTimeoutMs?: number;
}

export interface Relay {
  /** Resolves once the subscription is registered with the NATS server (routing is live). */
  ready: Promise<void>;
  /** Applies the agent's Response frame. */
  resolve(res: Response): void;
  /** Unsubscribes and fails every pending request. */
  stop(): void;
}

const respondError = (msg: Msg, err: OrchError) => {
  if (!msg.reply) return;
  const { data, hdrs } = encodeError(err);
  msg.respond(data, { headers: hdrs });
};

/** Tells an observer's completion the outcome; its failure is logged, never thrown. */
function settleCompletion(log: Logger, done: ReturnType<RelayObserver>, ok: boolean): Promise<void> | undefined {
  if (!done) return undefined;
  try {
    const r = done(ok);
    return r
      ? r.catch((err: unknown) => log.warn({ err: (err as Error).message }, "relay completion failed"))
      : undefined;
  } catch (err) {
    log.warn({ err: (err as Error).message }, "relay completion failed");
    return undefined;
  }
}

/** The error an agent's Response carries, as the caller sees it (unknown codes and reasons are not passed on). */
function agentError(e: NonNullable<Response["error"]>): OrchError {
  return new OrchError(
    isCode(e.code) ? e.code : "INTERNAL",
    isErrorReason(e.reason) ? e.reason : undefined,
    e.message || "the agent reported an error",
    e.details ?? {},
  );
}

const notApproved = (msg: Msg) =>
  respondError(msg, new OrchError("FAILED_PRECONDITION", "agent_not_approved", "the agent is not approved"));

/** Runs `forward` if the agent is approved, asking the registry once more (recheck) before refusing. */
function whenApproved(opts: RelayOptions, msg: Msg, stopped: () => boolean, forward: () => void): void {
  if (opts.approved()) forward();
  else if (!opts.recheck) notApproved(msg);
  else
    void opts.recheck().then(
      (approved) => {
        if (stopped()) respondError(msg, new OrchError("UNAVAILABLE", "agent_disconnected", "the agent disconnected"));
        else if (approved) forward();
        else notApproved(msg);
      },
      (err: unknown) => {
        opts.log.warn({ err: (err as Error).message }, "approval recheck failed");
        notApproved(msg);
      },
    );
}

/**
 * Serves `orch.agent.<node_id>.>` for the one link this replica holds (no queue group: only the
 * holder subscribes, so with no holder callers get no-responders). Each request becomes a Request
 * frame; the agent's Response is the NATS reply.
 */
export function createRelay(opts: RelayOptions): Relay {
  const maxPending = opts.maxPending ?? 256;
  type Done = ReturnType<RelayObserver>;
  const pending = new Map<bigint, { msg: Msg; timer: NodeJS.Timeout; done: Done; span: RelaySpan | undefined }>();
  let nextId = 1n;
  let stopped = false;

  const settle = (done: Done, ok: boolean) => settleCompletion(opts.log, done, ok);

  const onRequest = (msg: Msg) => {
    const method = msg.subject.slice(msg.subject.lastIndexOf(".") + 1);
    if (method.startsWith("_")) {
      void opts
        .internal(method, msg)
        .catch((err) => opts.log.warn({ err: (err as Error).message, method }, "internal link request failed"));
      return;
    }
    if (!msg.reply) return; // nothing would carry the answer back
    whenApproved(
      opts,
      msg,
      () => stopped,
      () => forward(msg, method),
    );
  };

  const forward = (msg: Msg, method: string) => {
    if (pending.size >= maxPending) {
      respondError(msg, new OrchError("RESOURCE_EXHAUSTED", "agent_busy", "too many requests in flight to this agent"));
      return;
    }
    const now = Date.now();
    const hdr = Number(msg.headers?.get(H.deadline) || 0);
    const deadline = hdr > 0 ? hdr : now + (opts.defaultTimeoutMs ?? 30_000);
    if (deadline <= now) return; // the caller has already given up
    const id = nextId++;
    let done: Done;
    try {
      done = opts.observe?.(method, msg.data, deadline);
    } catch (err) {
      opts.log.warn({ err: (err as Error).message, method }, "relay observer failed");
    }
    const span = startRelaySpan(method, opts.nodeId, msg.headers);
    const timer = setTimeout(() => {
      if (!pending.delete(id)) return;
      settle(done, false);
      span?.end("agent_timeout");
      respondError(msg, new OrchError("DEADLINE_EXCEEDED", "agent_timeout", "the agent did not answer in time"));
    }, deadline - now);
    timer.unref();
    pending.set(id, { msg, timer, done, span });
    bulkMoved(msg.data.length);
    opts.send({
      frame: {
        case: "request",
        value: { id, method, payload: msg.data, deadline, ...(span ? { traceContext: span.traceContext } : {}) },
      },
    });
  };

  const sub: Subscription = opts.nc.subscribe(`${agentSubject(opts.nodeId)}.>`, {
    callback: (err, msg) => {
      if (err) {
        opts.log.warn({ err: err.message }, "agent subscription error");
        return;
      }
      if (!stopped) onRequest(msg);
    },
  });

  return {
    ready: opts.nc.flush(),
    resolve(res) {
      bulkMoved(res.payload.length);
      const p = pending.get(res.id);
      if (!p) return; // timed out already, or a confused agent
      pending.delete(res.id);
      clearTimeout(p.timer);
      if (res.error) {
        const e = res.error;
        void settle(p.done, false);
        p.span?.end(e.reason || e.code || "error");
        respondError(p.msg, agentError(e));
        return;
      }
      const reply = () => {
        p.span?.end();
        if (p.msg.reply) p.msg.respond(res.payload);
      };
      const settled = settle(p.done, true);
      if (settled) void settled.then(reply);
      else reply();
    },
    stop() {
      if (stopped) return;
      stopped = true;
      sub.unsubscribe();
      for (const [id, p] of pending) {
        clearTimeout(p.timer);
        void settle(p.done, false);
        p.span?.end("agent_disconnected");
        respondError(
          p.msg,
          new OrchError("UNAVAILABLE", "agent_disconnected", "the agent disconnected before answering"),
        );
        pending.delete(id);
      }
    },
  };
}

export const serverFrame = (init: ServerFrameInit) => create(ServerFrameSchema, init);
