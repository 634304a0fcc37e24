import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { fileURLToPath } from "node:url";
import { jetstream } from "@nats-io/jetstream";
import { toBinary } from "@bufbuild/protobuf";
import { AuditEventSchema, type EventType, type Severity } from "@orch/contracts";
import {
  auditSubject,
  buildEvent,
  ensureAuditStream,
  systemClock,
  ulidGenerator,
  type Logger,
  type NatsConnection,
} from "@orch/kit";
import { serviceDeps, waitMs, type DbHandle, type NatsHandle } from "@orch/kit/testing";
import { notifyConfigSchema } from "../src/config.js";
import type { NotifyOptions } from "../src/deps.js";
import { createNotifyService } from "../src/service.js";

export const NOTIFY_MIGRATIONS = fileURLToPath(new URL("../migrations", import.meta.url));

/**
 * Fast retries and polling, private targets allowed (receivers listen on 127.0.0.1). The receiver
 * answers from the test's own process, so on a starved machine its answer can take seconds: the
 * request timeout scales with the wait factor, or every attempt of a delivery can time out.
 */
export const FAST = {
  allow_private_targets: true,
  retry_base_ms: 100,
  retry_max_ms: 2000,
  poll_ms: 50,
  operators_cache_ms: 0,
  lease_ms: 5000,
  request_timeout_ms: waitMs(3000),
};

/** A fixed test keyring for channel credentials (the service refuses to start without one). */
export const TEST_CREDENTIALS_KEYS = `t1:${Buffer.alloc(32, 5).toString("base64")}`;

export async function startNotify(
  nats: NatsHandle,
  db: DbHandle,
  notify: Record<string, unknown> = FAST,
  opts: NotifyOptions & { log?: Logger } = {},
) {
  const config = notifyConfigSchema.parse({ notify: { credentials_keys: TEST_CREDENTIALS_KEYS, ...notify } });
  const deps = await serviceDeps({
    name: "notify",
    nats,
    db,
    schema: "notify",
    migrations: NOTIFY_MIGRATIONS,
    config,
    ...(opts.log ? { log: opts.log } : {}),
  });
  const svc = await createNotifyService(deps, opts);
  // The RPC subscriptions reach the server before the first request (no "no responders" under load).
  await deps.nc.flush();
  return {
    deps,
    svc,
    async stop() {
      await svc.stop();
      await deps.close();
    },
  };
}

export interface Received {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  status: number;
}

export interface Receiver {
  url: string;
  port: number;
  got: Received[];
  /** Decides the answer to request number `n` (0-based); default 200 "ok". */
  respond: (
    n: number,
    req: Omit<Received, "status">,
  ) => { status: number; body?: string; headers?: Record<string, string> };
  close(): Promise<void>;
}

/** A real HTTP receiver on 127.0.0.1 that records every request and answers as told. */
export async function startReceiver(): Promise<Receiver> {
  const r: Receiver = {
    url: "",
    port: 0,
    got: [],
    respond: () => ({ status: 200, body: "ok" }),
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const base = {
        method: req.method ?? "",
        url: req.url ?? "",
        headers: req.headers,
        body: Buffer.concat(chunks).toString("utf8"),
      };
      const a = r.respond(r.got.length, base);
      r.got.push({ ...base, status: a.status });
      res.writeHead(a.status, a.headers ?? {}).end(a.body ?? "");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const addr = server.address();
  r.port = typeof addr === "object" && addr ? addr.port : 0;
  r.url = `http://127.0.0.1:${r.port}`;
  r.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return r;
}

/** Publishes an audit event on the real AUDIT stream, as any service's outbox relay would. */
export async function publishEvent(
  nc: NatsConnection,
  ev: {
    type: EventType;
    summary: string;
    severity?: Severity;
    target?: { id: string; name: string; type: string };
    metadata?: Record<string, unknown>;
  },
) {
  await ensureAuditStream(nc, { replicas: 1, maxAgeDays: 1 });
  const event = buildEvent(ulidGenerator(), systemClock, {
    type: ev.type,
    summary: ev.summary,
    actor: { id: "system", name: "system", type: "system" },
    target: ev.target ?? { id: "node-1", name: "web-1", type: "agent" },
    ...(ev.severity ? { severity: ev.severity } : {}),
    ...(ev.metadata ? { metadata: ev.metadata } : {}),
  });
  await jetstream(nc).publish(auditSubject(event.eventType), toBinary(AuditEventSchema, event), { msgID: event.id });
  return event;
}
