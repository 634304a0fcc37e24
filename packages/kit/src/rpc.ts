import type { DescMessage, DescMethod, MessageInitShape, MessageShape } from "@bufbuild/protobuf";
import type { GenService, GenServiceMethods } from "@bufbuild/protobuf/codegenv2";
import {
  headers as natsHeaders,
  type Msg,
  type MsgHdrs,
  type NatsConnection,
  type Subscription,
} from "@nats-io/transport-node";
import { createMessageCodec } from "./codec/index.js";
import { OrchError, errorFromBinary, errorToBinary, isCode } from "./errors.js";
import { IDEMPOTENCY_HDR, readIdempotency, withIdempotency, type IdempotencyStore } from "./idempotency.js";
import { rejectInvalidStrings } from "./input.js";
import { busError, sendSoon } from "./nats.js";
import { request } from "./request-inbox.js";
import type { Logger } from "./logger.js";
import { observeClient, observeServer, type RpcCallInfo } from "./rpc-observers.js";
import { bulkMoved } from "./bulk-pacer.js";

/** Who is calling, carried in headers on every request. */
export interface Actor {
  id: string;
  name: string;
  /** operator | agent | system */
  type: string;
  /** admin | operator | "" */
  role: string;
  /**
   * The operator's agent selector (assignment grammar); absent or "" = unscoped. Services that
   * touch agents enforce it themselves (scope.ts), so a caller that skips the gateway gains nothing.
   */
  scope?: string;
}
export const SYSTEM_ACTOR: Actor = { id: "system", name: "system", type: "system", role: "" };

export interface CallContext {
  requestId: string;
  actor: Actor;
  /** Absolute deadline, ms since epoch. */
  deadline: number;
  log: Logger;
}

export const H = {
  requestId: "orch-request-id",
  actorId: "orch-actor-id",
  actorName: "orch-actor-name",
  actorType: "orch-actor-type",
  actorRole: "orch-actor-role",
  actorScope: "orch-actor-scope",
  deadline: "orch-deadline",
  error: "orch-error",
} as const;

type Methods<S> = S extends GenService<infer M> ? M : never;
type In<M> = M extends { input: infer I extends DescMessage } ? I : never;
type Out<M> = M extends { output: infer O extends DescMessage } ? O : never;

export type Handlers<S extends GenService<GenServiceMethods>> = {
  [K in keyof Methods<S>]: (
    req: MessageShape<In<Methods<S>[K]>>,
    ctx: CallContext,
  ) => Promise<MessageInitShape<Out<Methods<S>[K]>>>;
};

export interface CallOptions {
  actor?: Actor;
  requestId?: string;
  timeoutMs?: number;
  /** The client's Idempotency-Key and a hash of its request; `onReplay` is told when the reply was a replay. */
  idempotency?: { key: string; hash: string; onReplay?: () => void };
}

export type Client<S extends GenService<GenServiceMethods>> = {
  [K in keyof Methods<S>]: (
    req: MessageInitShape<In<Methods<S>[K]>>,
    opts?: CallOptions,
  ) => Promise<MessageShape<Out<Methods<S>[K]>>>;
};

export const rpcSubject = (service: string, method: string) => `orch.${service}.${method}`;
export const pingSubject = (service: string) => `orch.${service}._ping`;

function readActor(h: MsgHdrs | undefined): Actor {
  if (!h) return SYSTEM_ACTOR;
  const id = h.get(H.actorId);
  if (!id) return SYSTEM_ACTOR;
  const actor: Actor = {
    id,
    name: h.get(H.actorName) || id,
    type: h.get(H.actorType) || "operator",
    role: h.get(H.actorRole) || "",
  };
  const scope = h.get(H.actorScope);
  if (scope) actor.scope = scope;
  return actor;
}

export function encodeError(err: OrchError): { data: Uint8Array; hdrs: MsgHdrs } {
  const hdrs = natsHeaders();
  hdrs.set(H.error, err.code);
  return { data: errorToBinary(err), hdrs };
}

export function decodeError(msg: Msg): OrchError | undefined {
  const code = msg.headers?.get(H.error);
  if (!code) return undefined;
  try {
    return errorFromBinary(msg.data);
  } catch {
    return new OrchError(isCode(code) ? code : "INTERNAL", undefined, "malformed error reply");
  }
}

export interface RpcServerOptions<S extends GenService<GenServiceMethods>> {
  nc: NatsConnection;
  /** Service name: subjects are orch.<name>.<Method>, the queue group is <name>. */
  name: string;
  service: S;
  handlers: Handlers<S>;
  log: Logger;
  /** Subject prefix override for per-entity routing, e.g. `orch.agent.<node_id>`. */
  subjectBase?: string;
  /** Queue group; null for no group (every subscriber gets every request). */
  queue?: string | null;
  /** Where replies to requests with an Idempotency-Key are kept (ServiceDeps.idempotency); none = keys ignored. */
  idempotency?: IdempotencyStore | undefined;
}

export interface RpcServer {
  /** In-flight handler count, for graceful shutdown. */
  inflight(): number;
  stop(): Promise<void>;
}

/**
 * One codec for every server and client of the process: its plans and generated functions are
 * built once per message type, not once per client (a fan-out makes a client per agent), and
 * sharing its scratch buffer is safe because encode and decode run synchronously.
 */
const codec = createMessageCodec();

/** Serves every method of a proto service over NATS request/reply. */
export function serveRpc<S extends GenService<GenServiceMethods>>(opts: RpcServerOptions<S>): RpcServer {
  const { nc, log } = opts;
  const base = opts.subjectBase ?? `orch.${opts.name}`;
  const queue = opts.queue === undefined ? opts.name : opts.queue;
  const subs: Subscription[] = [];
  let inflight = 0;
  const methods = (opts.service as unknown as { methods: DescMethod[] }).methods;
  for (const method of methods) {
    const handler = (opts.handlers as Record<string, (req: unknown, ctx: CallContext) => Promise<unknown>>)[
      method.localName
    ];
    if (!handler) throw new Error(`rpc ${opts.name}: no handler for ${method.name}`);
    const subject = `${base}.${method.name}`;
    const info: RpcCallInfo = { service: opts.subjectBase ? "agent" : opts.name, method: method.name };
    const onMsg = (msg: Msg) => observeServer(info, msg.headers, () => handle(msg));
    const handle = async (msg: Msg): Promise<string> => {
      inflight++;
      // The reply is sent in a later turn; the request stays in flight (for stop()) until then.
      let replying = false;
      const requestId = msg.headers?.get(H.requestId) || "";
      const deadlineHdr = Number(msg.headers?.get(H.deadline) || 0);
      const deadline = deadlineHdr > 0 ? deadlineHdr : Date.now() + 30_000;
      let childLog: Logger | undefined;
      const ctx: CallContext = {
        requestId,
        actor: readActor(msg.headers),
        deadline,
        // A child logger per request is measurable on the hot path; build it only when used.
        get log() {
          return (childLog ??= log.child({ rpc: method.name, requestId }));
        },
      };
      try {
        // The caller has given up; doing the work would only add load.
        if (Date.now() > deadline) return "DEADLINE_EXCEEDED";
        bulkMoved(msg.data.length);
        const req = codec.decode(method.input, msg.data);
        // One gate for every handler: a NUL would otherwise reach Postgres and come back as a 500.
        rejectInvalidStrings(req);
        // A request with an Idempotency-Key runs at most once; a retry gets the stored reply.
        const idem = readIdempotency(msg.headers, ctx.actor.id, method.name, msg.data);
        const { data, replayed } = await withIdempotency(opts.idempotency, idem, deadline, async () =>
          codec.encode(method.output, await handler(req, ctx)),
        );
        if (msg.reply) {
          replying = true;
          sendSoon(nc, () => {
            try {
              if (replayed) {
                const hdrs = natsHeaders();
                hdrs.set(IDEMPOTENCY_HDR.replayed, "true");
                msg.respond(data, { headers: hdrs });
              } else msg.respond(data);
            } catch (err) {
              ctx.log.warn({ err }, "reply failed");
            } finally {
              inflight--;
            }
          });
        }
        return "";
      } catch (err) {
        const e = OrchError.from(err);
        if (e.code === "INTERNAL") ctx.log.error({ err: e.cause ?? err }, "handler failed");
        else ctx.log.debug({ code: e.code, reason: e.reason }, "handler refused");
        if (msg.reply) {
          const { data, hdrs } = encodeError(e);
          msg.respond(data, { headers: hdrs });
        }
        return e.code;
      } finally {
        if (!replying) inflight--;
      }
    };
    subs.push(
      nc.subscribe(subject, {
        ...(queue ? { queue } : {}),
        callback: (err, msg) => {
          if (err) {
            log.error({ err, subject }, "subscription error");
            return;
          }
          void onMsg(msg);
        },
      }),
    );
  }
  if (!opts.subjectBase) {
    subs.push(
      nc.subscribe(pingSubject(opts.name), {
        ...(queue ? { queue } : {}),
        callback: (_e, m) => void m.respond(new Uint8Array()),
      }),
    );
  }
  return {
    inflight: () => inflight,
    async stop() {
      for (const s of subs) s.unsubscribe();
      const until = Date.now() + 10_000;
      while (inflight > 0 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    },
  };
}

export interface RpcClientOptions {
  /** Default timeout; every request has one. */
  timeoutMs: number;
  subjectBase?: string;
}

/** A typed client: one async function per proto method. Errors arrive as OrchError. */
export function rpcClient<S extends GenService<GenServiceMethods>>(
  nc: NatsConnection,
  name: string,
  service: S,
  opts: RpcClientOptions,
): Client<S> {
  const base = opts.subjectBase ?? `orch.${name}`;
  const client: Record<string, unknown> = {};
  const methods = (service as unknown as { methods: DescMethod[] }).methods;
  for (const method of methods) {
    const subject = `${base}.${method.name}`;
    const info: RpcCallInfo = { service: opts.subjectBase ? "agent" : name, method: method.name };
    client[method.localName] = async (req: unknown, call: CallOptions = {}) => {
      const timeout = call.timeoutMs ?? opts.timeoutMs;
      // append, not set: each key is new, and set first searches for (and deletes) the key.
      const hdrs = natsHeaders();
      if (call.requestId) hdrs.append(H.requestId, call.requestId);
      if (call.actor) {
        hdrs.append(H.actorId, call.actor.id);
        hdrs.append(H.actorName, call.actor.name);
        hdrs.append(H.actorType, call.actor.type);
        if (call.actor.role) hdrs.append(H.actorRole, call.actor.role);
        // Whitespace only separates selector terms, so folding it keeps the meaning and the header valid.
        if (call.actor.scope) hdrs.append(H.actorScope, call.actor.scope.replace(/\s+/g, " "));
      }
      hdrs.append(H.deadline, String(Date.now() + timeout));
      if (call.idempotency) {
        hdrs.append(IDEMPOTENCY_HDR.key, call.idempotency.key);
        hdrs.append(IDEMPOTENCY_HDR.hash, call.idempotency.hash);
      }
      let reply: Msg;
      try {
        const data = codec.encode(method.input, req);
        bulkMoved(data.length);
        reply = await observeClient(
          info,
          hdrs,
          () =>
            new Promise<Msg>((resolve, reject) =>
              sendSoon(nc, () => {
                try {
                  request(nc, subject, data, timeout, hdrs).then(resolve, reject);
                } catch (err) {
                  reject(err);
                }
              }),
            ),
        );
      } catch (err) {
        throw busError(err);
      }
      bulkMoved(reply.data.length);
      if (reply.headers?.get(IDEMPOTENCY_HDR.replayed)) call.idempotency?.onReplay?.();
      const err = decodeError(reply);
      if (err) throw err;
      return codec.decode(method.output, reply.data);
    };
  }
  return client as Client<S>;
}

/** Asks whether at least one replica of a service answers. */
export async function pingService(nc: NatsConnection, name: string, timeoutMs = 1000): Promise<boolean> {
  try {
    await nc.request(pingSubject(name), new Uint8Array(), { timeout: timeoutMs });
    return true;
  } catch {
    return false;
  }
}
