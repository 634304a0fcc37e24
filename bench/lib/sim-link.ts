/**
 * What the benches' load-generator children (sim-command-agent.ts, sim-state-agent.ts) have in
 * common: one simulated agent link (real gRPC, the real signed handshake, Ping answered, other
 * methods refused as orch-agent does) that a child extends with the methods it serves, and the
 * child's main loop holding N such links and talking to its parent over IPC.
 */
import { sign } from "node:crypto";
import { parseArgs } from "node:util";
import type * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type MessageInitShape } from "@bufbuild/protobuf";
import {
  AgentFrameSchema,
  PingRequestSchema,
  PingResponseSchema,
  agentLinkGrpcDefinition,
  type AgentFrame,
  type ServerFrame,
} from "@orch/contracts";
import { defaultAttributes, linkClient, simKey, type SimKey } from "./sim-agent.js";

export type LinkFrame = MessageInitShape<typeof AgentFrameSchema>["frame"];
export type LinkRequest = Extract<ServerFrame["frame"], { case: "request" }>["value"];

/** Messages a link fleet sends its parent; `Stats` is what its own counters hold. */
export type LinkFleetReport<Stats> =
  | { type: "keys"; nodeIds: string[] }
  | { type: "welcomed"; count: number; failed: number; ms: number; firstError: string | null }
  | ({ type: "stats" } & Stats);
export type LinkFleetCommand = { type: "stats" } | { type: "stop" };

/** What the fleet loop needs of one link. */
export interface FleetLink {
  welcome: Promise<void>;
  close(): void;
}

export interface SimLink extends FleetLink {
  /** Writes a frame unless the link was closed. */
  send(frame: LinkFrame): void;
  answer(id: bigint, payload: Uint8Array): void;
}

/**
 * Opens one link and says Hello. `serve` gets every request but Ping and returns false for a
 * method it does not serve, which is then refused with `unknown_method`.
 */
export function openSimLink(
  client: grpc.Client,
  key: SimKey,
  i: number,
  serve: (req: LinkRequest) => boolean,
): SimLink {
  const stream = client.makeBidiStreamRequest(
    agentLinkGrpcDefinition.connect.path,
    agentLinkGrpcDefinition.connect.requestSerialize,
    agentLinkGrpcDefinition.connect.responseDeserialize,
  ) as grpc.ClientDuplexStream<AgentFrame, ServerFrame>;
  let closed = false;
  const send = (frame: LinkFrame) => {
    if (!closed) stream.write(create(AgentFrameSchema, { frame }));
  };
  const answer = (id: bigint, payload: Uint8Array) => send({ case: "response", value: { id, payload } });
  let ok!: () => void;
  let fail!: (e: Error) => void;
  const welcome = new Promise<void>((a, b) => {
    ok = a;
    fail = b;
  });
  welcome.catch(() => {});
  stream.on("data", (f: ServerFrame) => {
    if (f.frame.case === "challenge")
      send({ case: "signature", value: { signature: sign(null, f.frame.value.nonce, key.privateKey) } });
    else if (f.frame.case === "welcome") ok();
    else if (f.frame.case === "refusal") fail(new Error(f.frame.value.reason));
    else if (f.frame.case === "request") {
      const req = f.frame.value;
      if (req.method === "Ping") {
        const ping = fromBinary(PingRequestSchema, req.payload);
        const res = create(PingResponseSchema, { payload: ping.payload, nodeId: key.nodeId, agentTime: Date.now() });
        answer(req.id, toBinary(PingResponseSchema, res));
      } else if (!serve(req)) {
        send({
          case: "response",
          value: {
            id: req.id,
            error: { code: "INVALID_ARGUMENT", reason: "unknown_method", message: `not served: ${req.method}` },
          },
        });
      }
    }
  });
  stream.on("error", (e: Error) => fail(e));
  stream.on("end", () => fail(new Error("stream ended")));
  send({
    case: "hello",
    value: { publicKey: key.publicKeyHex, version: "0.0.0-sim", attributes: defaultAttributes(i, key.nodeId) },
  });
  return {
    welcome,
    send,
    answer,
    close() {
      closed = true;
      stream.cancel();
    },
  };
}

/**
 * The child's main loop: `--target`, `--count`, `--exec-ms`, `--per-channel` from argv; N keys
 * (reported first, so the parent can approve them), then N links over 64 concurrent handshakes,
 * `--per-channel` links sharing one gRPC channel. Answers `stats` with `counters`; `stop` or the
 * parent going away closes everything and exits.
 */
export async function runLinkFleet<Stats extends object>(opts: {
  defaults: { count: string; execMs: string };
  counters: Stats;
  connect: (client: grpc.Client, key: SimKey, i: number, execMs: number) => FleetLink;
}): Promise<void> {
  const { values } = parseArgs({
    options: {
      target: { type: "string" },
      count: { type: "string", default: opts.defaults.count },
      "exec-ms": { type: "string", default: opts.defaults.execMs },
      "per-channel": { type: "string", default: "100" },
    },
  });
  const target = values.target ?? "";
  if (!/^127\.0\.0\.1:\d+$/.test(target)) throw new Error("--target must be a loopback 127.0.0.1:<port> address");
  const count = Number(values.count);
  const execMs = Number(values["exec-ms"]);
  const perChannel = Math.max(1, Number(values["per-channel"]));
  const report = (m: LinkFleetReport<Stats>) => process.send?.(m);
  const keys = Array.from({ length: count }, simKey);
  report({ type: "keys", nodeIds: keys.map((k) => k.nodeId) });

  const clients: grpc.Client[] = [];
  const sims: FleetLink[] = [];
  const stop = () => {
    for (const s of sims) s.close();
    for (const c of clients) c.close();
    process.exit(0);
  };
  process.on("disconnect", stop);
  process.on("message", (m: LinkFleetCommand) => {
    if (m.type === "stop") stop();
    if (m.type === "stats") report({ type: "stats", ...opts.counters });
  });
  const started = performance.now();
  let failed = 0;
  let firstError: string | null = null;
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      if (i % perChannel === 0) clients.push(linkClient(target));
      const sim = opts.connect(clients[Math.floor(i / perChannel)]!, keys[i]!, i, execMs);
      sims.push(sim);
      try {
        await sim.welcome;
      } catch (err) {
        failed++;
        firstError ??= (err as Error).message;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(64, count) }, worker));
  report({ type: "welcomed", count: count - failed, failed, ms: performance.now() - started, firstError });
}
