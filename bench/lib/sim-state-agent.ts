/**
 * Simulated orch-agents that also serve AgentStateService.Execute, for `npm run bench -- fanout`.
 * Same link as bench/lib/sim-agent.ts (real gRPC, the real signed handshake; its key and channel
 * helpers are reused); on top of Ping they answer Execute with plausible per-resource results:
 * `changed` (with a unified diff for files) the first time a resource is applied, `ok` after,
 * after `--exec-ms` of simulated work. Run as a script it holds N links (bench/lib/sim-link.ts) and
 * talks to its parent over IPC, so the generator's CPU is not the bench process's.
 */
import { createHash } from "node:crypto";
import { pathToFileURL } from "node:url";
import type * as grpc from "@grpc/grpc-js";
import type { JsonObject, MessageInitShape } from "@bufbuild/protobuf";
import { createMessageCodec } from "@orch/kit/codec";
import { ExecuteRequestSchema, ExecuteResponseSchema, type ExecuteRequest } from "@orch/contracts";
import type { SimKey } from "./sim-agent.js";
import { openSimLink, runLinkFleet, type FleetLink } from "./sim-link.js";

/** What the fleet answers `stats` with. */
export interface StateCounters {
  executes: number;
  resources: number;
}

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
      observed: (r.type === "file" ? { sha256: sha256(content), mode: "0644" } : {}) as JsonObject,
    };
  });
}

const hashes = new Map<string, string>();
/** sha256 of a file's content: thousands of agents share a few hundred contents. */
function sha256(content: string): string {
  let h = hashes.get(content);
  if (h === undefined) {
    h = createHash("sha256").update(content).digest("hex");
    if (hashes.size < 100_000) hashes.set(content, h);
  }
  return h;
}

// The agent's own codec (agent/src/link/dispatch.ts), so the generator costs what a real agent's decode and encode do.
const codec = createMessageCodec();

function connect(client: grpc.Client, key: SimKey, i: number, execMs: number, counters: StateCounters): FleetLink {
  const applied = new Set<string>();
  // One Execute at a time, as orch-agent does.
  let queue: Promise<unknown> = Promise.resolve();
  const link = openSimLink(client, key, i, (req) => {
    if (req.method !== "Execute") return false;
    queue = queue.then(async () => {
      const exec = codec.decode(ExecuteRequestSchema, req.payload) as ExecuteRequest;
      if (execMs > 0) await new Promise((r) => setTimeout(r, execMs));
      counters.executes++;
      counters.resources += exec.resources.length;
      const payload = codec.encode(ExecuteResponseSchema, { results: simulateExecute(exec, applied) });
      link.send({ case: "response", value: { id: req.id, payload } });
    });
    return true;
  });
  return link;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const counters: StateCounters = { executes: 0, resources: 0 };
  runLinkFleet({
    defaults: { count: "500", execMs: "20" },
    counters,
    connect: (client, key, i, execMs) => connect(client, key, i, execMs, counters),
  }).catch((err) => {
    console.error(`sim-state-agent: ${(err as Error).message}`);
    process.exit(1);
  });
}
