/**
 * The one place cross-cutting RPC work hooks in (tracing, RED metrics), like an interceptor chain:
 * serveRpc and rpcClient wrap each request in every registered observer, outermost first, and pay
 * nothing when none is registered. Observers are process-wide because what they feed is (the global
 * tracer provider, the process's metrics registry); runMain registers them.
 */
import type { Msg, MsgHdrs } from "@nats-io/transport-node";

export interface RpcCallInfo {
  /** Service name (orch.<service>.<Method>), or "agent" for per-agent subjects. Never an id. */
  service: string;
  /** Proto method name. */
  method: string;
}

export interface RpcObserver {
  /** Wraps one handled request; `handle` resolves with the error code answered ("" = success). */
  server?(info: RpcCallInfo, headers: MsgHdrs | undefined, handle: () => Promise<string>): Promise<string>;
  /** Wraps one outgoing request; may set headers before calling `send`, and sees its reply or error. */
  client?(info: RpcCallInfo, headers: MsgHdrs, send: () => Promise<Msg>): Promise<Msg>;
}

const observers: RpcObserver[] = [];

/** Registers an observer; returns its removal (tests). */
export function addRpcObserver(o: RpcObserver): () => void {
  observers.push(o);
  return () => {
    const i = observers.indexOf(o);
    if (i >= 0) observers.splice(i, 1);
  };
}

export function observeServer(info: RpcCallInfo, headers: MsgHdrs | undefined, handle: () => Promise<string>) {
  let next = handle;
  for (let i = observers.length - 1; i >= 0; i--) {
    const o = observers[i]!.server;
    if (!o) continue;
    const inner = next;
    next = () => o(info, headers, inner);
  }
  return next();
}

export function observeClient(info: RpcCallInfo, headers: MsgHdrs, send: () => Promise<Msg>) {
  let next = send;
  for (let i = observers.length - 1; i >= 0; i--) {
    const o = observers[i]!.client;
    if (!o) continue;
    const inner = next;
    next = () => o(info, headers, inner);
  }
  return next();
}
