/**
 * Simulated orch-agent links: real gRPC, the real signed handshake, attributes in Hello, metrics on
 * an interval, Ping answered. Used in-process by tests (connectSimAgent) and, run as a script, as
 * the bench's load generator (one child process holding N links, driven over IPC).
 */
import { generateKeyPairSync, sign, type KeyObject } from "node:crypto";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import {
  AgentFrameSchema,
  PingRequestSchema,
  PingResponseSchema,
  agentLinkGrpcDefinition,
  nodeIdFromPublicKey,
  type AgentFrame,
  type ServerFrame,
  type Welcome,
} from "@orch/contracts";

export interface SimKey {
  privateKey: KeyObject;
  publicKeyHex: string;
  nodeId: string;
}

export function simKey(): SimKey {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  const der = publicKey.export({ format: "der", type: "spki" });
  const raw = der.subarray(der.length - 32);
  return { privateKey, publicKeyHex: raw.toString("hex"), nodeId: nodeIdFromPublicKey(raw) };
}

/**
 * One gRPC channel to the link server. A private subchannel pool gives each client its own TCP
 * connection; grpc-js otherwise shares one connection among all clients of the same target.
 */
export function linkClient(target: string): grpc.Client {
  return new grpc.Client(target, grpc.credentials.createInsecure(), {
    "grpc.use_local_subchannel_pool": 1,
    "grpc.keepalive_time_ms": 60_000,
    "grpc.max_reconnect_backoff_ms": 2_000,
  });
}

export interface SimAgentOptions {
  version?: string;
  attributes?: Record<string, string>;
  /** 0 = no metrics. */
  metricsIntervalMs?: number;
  /** Delay before the first sample (spreads N agents over the interval). */
  metricsFirstDelayMs?: number;
  /** Bounds the wait for Welcome / Refusal. */
  handshakeTimeoutMs?: number;
}

export interface SimAgent {
  readonly nodeId: string;
  readonly key: SimKey;
  /** Resolves with the Welcome; rejects with the Refusal reason (e.g. agent_rejected) or the stream error. */
  readonly welcome: Promise<Welcome>;
  /** Resolves when the server ends the stream (or close() is called), with the cause. */
  readonly ended: Promise<string>;
  stats(): { pings: number; metrics: number; requests: number };
  /** The most recent Welcome (status and name as the server last announced them). */
  lastWelcome(): Welcome | undefined;
  sendMetrics(): void;
  close(): void;
}

export function defaultAttributes(i: number, nodeId: string): Record<string, string> {
  return {
    hostname: `sim-${i}`,
    os: "linux",
    kernel: "6.1.0-sim",
    arch: "x64",
    cpus: "2",
    memory_bytes: String(4 * 2 ** 30),
    agent_version: "0.0.0-sim",
    terminal_enabled: "false",
    node: nodeId.slice(0, 12),
  };
}

function sample(now: number) {
  return {
    takenAt: now,
    cpuPercent: 5 + Math.random() * 20,
    load1: Math.random(),
    load5: 0.5,
    load15: 0.4,
    memoryTotal: 4 * 2 ** 30,
    memoryUsed: 2 ** 30,
    diskTotal: 64 * 2 ** 30,
    diskUsed: 10 * 2 ** 30,
    netRxBytes: 1e6,
    netTxBytes: 5e5,
    uptimeSeconds: 3600,
  };
}

export function connectSimAgent(client: grpc.Client, key: SimKey, opts: SimAgentOptions = {}): SimAgent {
  const stream = client.makeBidiStreamRequest(
    agentLinkGrpcDefinition.connect.path,
    agentLinkGrpcDefinition.connect.requestSerialize,
    agentLinkGrpcDefinition.connect.responseDeserialize,
  ) as grpc.ClientDuplexStream<AgentFrame, ServerFrame>;
  const counters = { pings: 0, metrics: 0, requests: 0 };
  const timers: NodeJS.Timeout[] = [];
  let closed = false;
  let endCause = "";
  let last: Welcome | undefined;
  const send = (frame: MessageInitShape<typeof AgentFrameSchema>["frame"]) => {
    if (!closed) stream.write(create(AgentFrameSchema, { frame }));
  };
  const sendMetrics = () => {
    counters.metrics++;
    send({ case: "metrics", value: sample(Date.now()) });
  };

  let settle!: { ok: (w: Welcome) => void; fail: (e: Error) => void };
  const welcome = new Promise<Welcome>((ok, fail) => (settle = { ok, fail }));
  welcome.catch(() => {});
  let onEnd!: (cause: string) => void;
  const ended = new Promise<string>((r) => (onEnd = r));
  const finish = (cause: string) => {
    if (closed) return;
    closed = true;
    endCause = cause;
    for (const t of timers) clearTimeout(t);
    settle.fail(new Error(cause));
    onEnd(cause);
  };
  const hsTimer = setTimeout(() => {
    finish("handshake_timeout");
    stream.cancel();
  }, opts.handshakeTimeoutMs ?? 60_000);
  timers.push(hsTimer);

  stream.on("data", (f: ServerFrame) => {
    switch (f.frame.case) {
      case "challenge": {
        const signature = sign(null, f.frame.value.nonce, key.privateKey);
        send({ case: "signature", value: { signature } });
        break;
      }
      case "welcome": {
        // The server sends Welcome again when the approval changes; only the first starts the agent.
        const first = !last;
        last = f.frame.value;
        if (!first) break;
        clearTimeout(hsTimer);
        settle.ok(f.frame.value);
        const every = opts.metricsIntervalMs ?? 0;
        if (every > 0) {
          timers.push(
            setTimeout(() => {
              sendMetrics();
              timers.push(setInterval(sendMetrics, every));
            }, opts.metricsFirstDelayMs ?? 0),
          );
        }
        break;
      }
      case "refusal":
        finish(f.frame.value.reason || "refused");
        break;
      case "request": {
        const req = f.frame.value;
        counters.requests++;
        if (req.method === "Ping") {
          counters.pings++;
          const ping = fromBinary(PingRequestSchema, req.payload);
          const payload = toBinary(
            PingResponseSchema,
            create(PingResponseSchema, { payload: ping.payload, nodeId: key.nodeId, agentTime: Date.now() }),
          );
          send({ case: "response", value: { id: req.id, payload } });
        } else {
          send({
            case: "response",
            value: {
              id: req.id,
              error: {
                code: "INVALID_ARGUMENT",
                reason: "unknown_method",
                message: `the simulated agent does not serve ${req.method}`,
              },
            },
          });
        }
        break;
      }
      default:
        break;
    }
  });
  stream.on("error", (err: grpc.ServiceError) =>
    finish(closed ? endCause : `stream_error: ${err.details || err.message}`),
  );
  stream.on("end", () => finish("stream_ended"));
  stream.on("close", () => finish("stream_closed"));

  send({
    case: "hello",
    value: { publicKey: key.publicKeyHex, version: opts.version ?? "0.0.0-sim", attributes: opts.attributes ?? {} },
  });

  return {
    nodeId: key.nodeId,
    key,
    welcome,
    ended,
    stats: () => ({ ...counters }),
    lastWelcome: () => last,
    sendMetrics,
    close() {
      if (closed) return;
      finish("closed");
      stream.cancel();
    },
  };
}

// ---- load generator (child process of bench/agents.ts) -------------------------------------------

/** Messages the fleet sends to its parent over IPC. */
export type FleetReport =
  | { type: "keys"; nodeIds: string[] }
  | {
      type: "welcomed";
      count: number;
      failedIds: string[];
      retries: number;
      ms: number;
      firstError: string | null;
      cpuMs: number;
    }
  | {
      type: "stats";
      pings: number;
      metrics: number;
      requests: number;
      connected: number;
      dropped: number;
      firstDrop: string | null;
    };

/** Commands the parent sends. */
export type FleetCommand = { type: "stats" } | { type: "stop" };

const MAX_ATTEMPTS = 8;

async function runFleet(): Promise<void> {
  const { values } = parseArgs({
    options: {
      target: { type: "string" },
      count: { type: "string", default: "1000" },
      "per-channel": { type: "string", default: "100" },
      "metrics-interval": { type: "string", default: "15" },
      "max-handshakes": { type: "string", default: "256" },
    },
  });
  const send = (m: FleetReport) => process.send?.(m);
  const target = values.target ?? "";
  if (!/^127\.0\.0\.1:\d+$/.test(target)) throw new Error("--target must be a loopback 127.0.0.1:<port> address");
  const count = Number(values.count);
  const perChannel = Math.max(1, Number(values["per-channel"]));
  const intervalMs = Number(values["metrics-interval"]) * 1000;
  const maxHandshakes = Math.max(1, Number(values["max-handshakes"]));

  const keys = Array.from({ length: count }, simKey);
  send({ type: "keys", nodeIds: keys.map((k) => k.nodeId) });

  const clients: grpc.Client[] = [];
  const agents: SimAgent[] = [];
  let dropped = 0;
  let firstDrop: string | null = null;
  const stop = () => {
    for (const a of agents) a.close();
    for (const c of clients) c.close();
    process.exit(0);
  };
  process.on("disconnect", stop);
  process.on("message", (m: FleetCommand) => {
    if (m.type === "stop") stop();
    if (m.type === "stats") {
      const s = { pings: 0, metrics: 0, requests: 0 };
      for (const a of agents) {
        const x = a.stats();
        s.pings += x.pings;
        s.metrics += x.metrics;
        s.requests += x.requests;
      }
      send({ type: "stats", ...s, connected: agents.length - dropped, dropped, firstDrop });
    }
  });

  // A bounded number of handshakes in flight: the server, not the generator's event loop, should be what is measured.
  const started = performance.now();
  const cpu0 = process.cpuUsage();
  const failedIds: string[] = [];
  let retries = 0;
  let firstError: string | null = null;
  let next = 0;
  // Like orch-agent: a failed handshake is retried after a jittered exponential backoff (bounded).
  const connect = async (i: number) => {
    const key = keys[i]!;
    for (let attempt = 1; ; attempt++) {
      const agent = connectSimAgent(clients[Math.floor(i / perChannel)]!, key, {
        attributes: defaultAttributes(i, key.nodeId),
        metricsIntervalMs: intervalMs,
        metricsFirstDelayMs: Math.random() * intervalMs,
      });
      try {
        await agent.welcome;
        agents.push(agent);
        void agent.ended.then((cause) => {
          if (cause === "closed") return;
          dropped++;
          firstDrop ??= cause;
        });
        return;
      } catch (err) {
        agent.close();
        const reason = (err as Error).message;
        firstError ??= reason;
        if (reason === "agent_rejected" || attempt >= MAX_ATTEMPTS) {
          failedIds.push(key.nodeId);
          return;
        }
        retries++;
        await new Promise((r) => setTimeout(r, Math.min(5000, 250 * 2 ** attempt) * (0.5 + Math.random())));
      }
    }
  };
  const worker = async () => {
    while (next < count) {
      const i = next++;
      if (i % perChannel === 0) clients.push(linkClient(target));
      await connect(i);
    }
  };
  await Promise.all(Array.from({ length: Math.min(maxHandshakes, count) }, worker));
  const cpu = process.cpuUsage(cpu0);
  send({
    type: "welcomed",
    count: count - failedIds.length,
    failedIds,
    retries,
    ms: performance.now() - started,
    firstError,
    cpuMs: (cpu.user + cpu.system) / 1000,
  });
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runFleet().catch((err) => {
    console.error(`sim-agent: ${(err as Error).message}`);
    process.exit(1);
  });
}
