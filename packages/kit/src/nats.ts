import { connect, type NatsConnection } from "@nats-io/transport-node";
import { errors as natsErrors } from "@nats-io/transport-node";
import { OrchError } from "./errors.js";
import type { Logger } from "./logger.js";

export type { NatsConnection };

export interface NatsOptions {
  url: string;
  name: string;
  user?: string | undefined;
  password?: string | undefined;
  log?: Logger;
}

/**
 * How a service notices a frozen server (SIGSTOP, a stalled VM): it keeps its TCP connections
 * open and answers nothing, so with the client's default 2-minute ping a service would stay stuck
 * on it for up to 4 minutes. Two unanswered 3 s pings (6-9 s) move it to another server of the
 * cluster, and a dial that gets no INFO within 2 s (the frozen server again) goes on to the next.
 * That moves the clients only: the other servers keep routing requests to the subscriptions a
 * service left on the frozen one until they drop their route to it (`ping_interval` / `ping_max`
 * of the server, docs/architecture.md D29).
 */
export const CLIENT_LIVENESS = { pingIntervalMs: 3_000, maxPingOut: 2, dialTimeoutMs: 2_000 } as const;

/**
 * Connects with reconnects forever: a service outlives NATS restarts. `noAsyncTraces` skips the
 * two stack traces nats.js builds per request (a third of request/reply CPU).
 */
export async function connectNats(opts: NatsOptions): Promise<NatsConnection> {
  const nc = await connect({
    servers: opts.url.split(","),
    name: opts.name,
    noAsyncTraces: true,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    reconnectJitter: 250,
    pingInterval: CLIENT_LIVENESS.pingIntervalMs,
    maxPingOut: CLIENT_LIVENESS.maxPingOut,
    timeout: CLIENT_LIVENESS.dialTimeoutMs,
    waitOnFirstConnect: true,
    // A per-service reply prefix lets bus permissions keep each service's replies private to it.
    inboxPrefix: `_INBOX_${opts.name.replace(/[^A-Za-z0-9_-]/g, "_")}`,
    ...(opts.user ? { user: opts.user, pass: opts.password ?? "" } : {}),
  });
  if (opts.log) {
    const log = opts.log;
    void (async () => {
      for await (const s of nc.status()) {
        if (s.type === "disconnect" || s.type === "reconnect" || s.type === "error")
          log.info({ nats: s.type }, "nats status");
      }
    })();
  }
  return nc;
}

type Send = () => void;
const batches = new WeakMap<NatsConnection, Send[]>();

/**
 * Runs `send` (a request or a reply) in one setImmediate turn shared by everything queued on the
 * connection in this event-loop turn. nats.js writes to the socket once per microtask turn, so
 * requests and replies made from separate I/O callbacks (HTTP requests, database results) each
 * cost a syscall here and a wakeup of nats-server; under load this sends them in one write.
 * Idle, it adds only the rest of the current loop turn. `send` must not throw.
 */
export function sendSoon(nc: NatsConnection, send: Send): void {
  const queued = batches.get(nc);
  if (queued) {
    queued.push(send);
    return;
  }
  const batch = [send];
  batches.set(nc, batch);
  setImmediate(() => {
    batches.delete(nc);
    for (const s of batch) s();
  });
}

/** Maps NATS client failures to the closed code set. */
export function busError(err: unknown): OrchError {
  if (err instanceof OrchError) return err;
  const chain: unknown[] = [];
  for (let e: unknown = err, i = 0; e && i < 4; e = (e as { cause?: unknown }).cause, i++) chain.push(e);
  for (const e of chain) {
    if (e instanceof natsErrors.NoRespondersError) {
      return new OrchError("UNAVAILABLE", "service_unavailable", "the service is not available", {}, { cause: err });
    }
    if (e instanceof natsErrors.TimeoutError) {
      return new OrchError("DEADLINE_EXCEEDED", "timeout", "the service did not answer in time", {}, { cause: err });
    }
    if (e instanceof natsErrors.PermissionViolationError) {
      return new OrchError(
        "PERMISSION_DENIED",
        "bus_permission_denied",
        "the bus refused this request",
        {},
        { cause: err },
      );
    }
    if (e instanceof natsErrors.ClosedConnectionError || e instanceof natsErrors.DrainingConnectionError) {
      return new OrchError("UNAVAILABLE", "bus_unavailable", "the message bus is not available", {}, { cause: err });
    }
  }
  if (err instanceof natsErrors.RequestError) {
    return new OrchError("UNAVAILABLE", "bus_unavailable", "the message bus is not available", {}, { cause: err });
  }
  return OrchError.from(err);
}
