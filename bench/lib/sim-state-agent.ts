/**
 * Simulated orch-agents that also serve AgentStateService.Execute, for `npm run bench -- fanout`.
 * Same link as bench/lib/sim-agent.ts (real gRPC, the real signed handshake; its key and channel
 * helpers are reused); on top of Ping they answer Execute with plausible per-resource results:
 * `changed` (with a unified diff for files) the first time a resource is applied, `ok` after,
 * after `--exec-ms` of simulated work. Run as a script it holds N links and talks to its parent
 * over IPC, so the generator's CPU is not the bench process's.
 */
import { createHash, sign } from "node:crypto";
import { pathToFileURL } from "node:url";
import { parseArgs } from "node:util";
import type * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary, type JsonObject, type MessageInitShape } from "@bufbuild/protobuf";
import {
  AgentFrameSchema,
  ExecuteRequestSchema,
  ExecuteResponseSchema,
  PingRequestSchema,
  PingResponseSchema,
  agentLinkGrpcDefinition,
  type AgentFrame,
  type ExecuteRequest,
  type ServerFrame,
} from "@orch/contracts";
import { defaultAttributes, linkClient, simKey, type SimKey } from "./sim-agent.js";

export type StateFleetReport =
  | { type: "keys"; nodeIds: string[] }
  | { type: "welcomed"; count: number; failed: number; ms: number; firstError: string | null }
  | { type: "stats"; executes: number; resources: number };
export type StateFleetCommand = { type: "stats" } | { type: "stop" };

type ResultInit = NonNullable<MessageInitShape<typeof ExecuteResponseSchema>["results"]>[number];

/** What one agent answers to Execute; `applied` remembers what earlier applies enforced. */
export function simulateExecute(req: ExecuteRequest, applied: Set<string>): ResultInit[] {
  return req.resources.map((r) => {
    const key = `${r.module}/${r.id}`;
    const done = applied.has(key);
    if (req.mode === "apply") applied.add(key);
    const spec = (r.spec ?? {}) as Record<string, unknown>;
    const path = typeof spec.path === "string" ? spec.path : "";
    const content = typeof spec.content === "string" ? spec.content : "";
    const diff = done
      ? ""
      : r.type === "file"
        ? `--- ${path}\tcurrent\n+++ ${path}\tdesired\n@@ -0,0 +1,1 @@\n+${content.replace(/\n$/, "")}\n`
        : `${r.type} ${path || spec.name || spec.command || r.id}: would be created\n`;
    return {
      id: r.id,
      module: r.module,
      type: r.type,
      status: done ? "ok" : "changed",
      changed: !done,
      diff,
      message: "",
      stdout: r.type === "exec" && !done && req.mode === "apply" ? "ok\n" : "",
      stderr: "",
      durationMs: 0.2,
      observed: (r.type === "file"
        ? { sha256: createHash("sha256").update(content).digest("hex"), mode: "0644" }
        : {}) as JsonObject,
    };
  });
}

interface StateSim {
  welcome: Promise<void>;
  close(): void;
}

function connect(
  client: grpc.Client,
  key: SimKey,
  i: number,
  execMs: number,
  counters: { executes: number; resources: number },
): StateSim {
  const stream = client.makeBidiStreamRequest(
    agentLinkGrpcDefinition.connect.path,
    agentLinkGrpcDefinition.connect.requestSerialize,
    agentLinkGrpcDefinition.connect.responseDeserialize,
  ) as grpc.ClientDuplexStream<AgentFrame, ServerFrame>;
  let closed = false;
  const send = (frame: MessageInitShape<typeof AgentFrameSchema>["frame"]) => {
    if (!closed) stream.write(create(AgentFrameSchema, { frame }));
  };
  const applied = new Set<string>();
  // One Execute at a time, as orch-agent does.
  let queue: Promise<unknown> = Promise.resolve();
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
        send({
          case: "response",
          value: {
            id: req.id,
            payload: toBinary(
              PingResponseSchema,
              create(PingResponseSchema, { payload: ping.payload, nodeId: key.nodeId, agentTime: Date.now() }),
            ),
          },
        });
      } else if (req.method === "Execute") {
        queue = queue.then(async () => {
          const exec = fromBinary(ExecuteRequestSchema, req.payload);
          if (execMs > 0) await new Promise((r) => setTimeout(r, execMs));
          counters.executes++;
          counters.resources += exec.resources.length;
          const payload = toBinary(
            ExecuteResponseSchema,
            create(ExecuteResponseSchema, { results: simulateExecute(exec, applied) }),
          );
          send({ case: "response", value: { id: req.id, payload } });
        });
      } else {
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
    close() {
      closed = true;
      stream.cancel();
    },
  };
}

async function runFleet(): Promise<void> {
  const { values } = parseArgs({
    options: {
      target: { type: "string" },
      count: { type: "string", default: "500" },
      "exec-ms": { type: "string", default: "20" },
      "per-channel": { type: "string", default: "100" },
    },
  });
  const target = values.target ?? "";
  if (!/^127\.0\.0\.1:\d+$/.test(target)) throw new Error("--target must be a loopback 127.0.0.1:<port> address");
  const count = Number(values.count);
  const execMs = Number(values["exec-ms"]);
  const perChannel = Math.max(1, Number(values["per-channel"]));
  const report = (m: StateFleetReport) => process.send?.(m);
  const keys = Array.from({ length: count }, simKey);
  report({ type: "keys", nodeIds: keys.map((k) => k.nodeId) });

  const counters = { executes: 0, resources: 0 };
  const clients: grpc.Client[] = [];
  const sims: StateSim[] = [];
  const stop = () => {
    for (const s of sims) s.close();
    for (const c of clients) c.close();
    process.exit(0);
  };
  process.on("disconnect", stop);
  process.on("message", (m: StateFleetCommand) => {
    if (m.type === "stop") stop();
    if (m.type === "stats") report({ type: "stats", ...counters });
  });
  const started = performance.now();
  let failed = 0;
  let firstError: string | null = null;
  let next = 0;
  const worker = async () => {
    while (next < count) {
      const i = next++;
      if (i % perChannel === 0) clients.push(linkClient(target));
      const sim = connect(clients[Math.floor(i / perChannel)]!, keys[i]!, i, execMs, counters);
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

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runFleet().catch((err) => {
    console.error(`sim-state-agent: ${(err as Error).message}`);
    process.exit(1);
  });
}
