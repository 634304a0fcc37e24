/**
 * Simulated orch-agents that serve AgentCommandService, for `npm run bench -- runs`. Same link as
 * bench/lib/sim-agent.ts (real gRPC, the real signed handshake; its key and channel helpers are
 * reused). RunCommand is answered as orch-agent does (agent/src/commands/handlers.ts) minus the
 * process: after `--exec-ms` of simulated work one CommandOutputChunk (stdout) is published on
 * `orch.state.output.<job_id>` through the link's bus bridge (a publish frame, which the agents
 * service allows only for a job relayed to this agent), then the answer: exit code 0 with the same
 * bytes as captured stdout. CancelCommand answers found=true for a job still waiting. Run as a
 * script it holds N links (bench/lib/sim-link.ts) and talks to its parent over IPC, so the
 * generator's CPU is its own.
 */
import { pathToFileURL } from "node:url";
import type * as grpc from "@grpc/grpc-js";
import { create, fromBinary, toBinary } from "@bufbuild/protobuf";
import {
  CancelCommandRequestSchema,
  CancelCommandResponseSchema,
  CommandOutputChunkSchema,
  RunCommandRequestSchema,
  RunCommandResponseSchema,
  commandOutputSubject,
} from "@orch/contracts";
import type { SimKey } from "./sim-agent.js";
import { openSimLink, runLinkFleet, type FleetLink } from "./sim-link.js";

/** What the fleet answers `stats` with. */
export interface CommandCounters {
  runs: number;
  cancels: number;
  chunks: number;
}

function connect(client: grpc.Client, key: SimKey, i: number, execMs: number, counters: CommandCounters): FleetLink {
  // Jobs run concurrently (unlike Execute); a cancel ends the wait early.
  const waiting = new Map<string, () => void>();

  const runCommand = async (id: bigint, payload: Uint8Array) => {
    const req = fromBinary(RunCommandRequestSchema, payload);
    const started = performance.now();
    const cancelled = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        waiting.delete(req.jobId);
        resolve(false);
      }, execMs);
      waiting.set(req.jobId, () => {
        clearTimeout(timer);
        waiting.delete(req.jobId);
        resolve(true);
      });
    });
    counters.runs++;
    const out = Buffer.from(`${key.nodeId.slice(0, 12)} up 42 days, load average: 0.01\n`);
    if (!cancelled) {
      const chunk = create(CommandOutputChunkSchema, { jobId: req.jobId, stream: "stdout", data: out, seq: 0 });
      link.send({
        case: "publish",
        value: { subject: commandOutputSubject(req.jobId), data: toBinary(CommandOutputChunkSchema, chunk) },
      });
      counters.chunks++;
    }
    const res = create(RunCommandResponseSchema, {
      exitCode: cancelled ? -1 : 0,
      signal: cancelled ? "SIGTERM" : "",
      cancelled,
      stdout: cancelled ? new Uint8Array() : out,
      durationMs: performance.now() - started,
    });
    link.answer(id, toBinary(RunCommandResponseSchema, res));
  };

  const link = openSimLink(client, key, i, (req) => {
    if (req.method === "RunCommand") {
      void runCommand(req.id, req.payload);
    } else if (req.method === "CancelCommand") {
      const c = fromBinary(CancelCommandRequestSchema, req.payload);
      const stop = waiting.get(c.jobId);
      if (stop) counters.cancels++;
      stop?.();
      link.answer(
        req.id,
        toBinary(CancelCommandResponseSchema, create(CancelCommandResponseSchema, { found: !!stop })),
      );
    } else return false;
    return true;
  });
  return {
    welcome: link.welcome,
    close() {
      link.close();
      for (const stop of waiting.values()) stop();
    },
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const counters: CommandCounters = { runs: 0, cancels: 0, chunks: 0 };
  runLinkFleet({
    defaults: { count: "1000", execMs: "50" },
    counters,
    connect: (client, key, i, execMs) => connect(client, key, i, execMs, counters),
  }).catch((err) => {
    console.error(`sim-command-agent: ${(err as Error).message}`);
    process.exit(1);
  });
}
