/**
 * A fleet of simulated agents (bench/lib/sim-agent.ts) in one child process, driven over IPC, and the
 * bulk approval the benches run before measuring: shared by the agents and console benches.
 */
import { fork, type ChildProcess } from "node:child_process";
import { fileURLToPath } from "node:url";
import { AgentsService } from "@orch/contracts";
import { SYSTEM_ACTOR, rpcClient, type NatsConnection } from "@orch/kit";
import type { FleetCommand, FleetReport } from "./sim-agent.js";

const SIM = fileURLToPath(new URL("./sim-agent.ts", import.meta.url));

export interface SimFleet {
  child: ChildProcess;
  /** The fleet's next report of this type; rejects after `ms` when given. */
  next<T extends FleetReport["type"]>(type: T, ms?: number): Promise<Extract<FleetReport, { type: T }>>;
  command(c: FleetCommand): boolean;
}

export function within<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  return Promise.race([
    p,
    new Promise<never>(
      (_, rej) =>
        (timer = setTimeout(() => rej(new Error(`${what}: no result within ${Math.round(ms / 1000)} s`)), ms)),
    ),
  ]).finally(() => clearTimeout(timer));
}

export function startSimFleet(opts: {
  /** host:port of the agents service's link. */
  target: string;
  count: number;
  metricsIntervalS: number;
  perChannel?: number;
}): SimFleet {
  const args = [
    "--target",
    opts.target,
    "--count",
    String(opts.count),
    "--metrics-interval",
    String(opts.metricsIntervalS),
  ];
  if (opts.perChannel !== undefined) args.push("--per-channel", String(opts.perChannel));
  const child = fork(SIM, args, {
    execArgv: ["--conditions=orch-source", "--import", "tsx"],
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  const waiters = new Map<string, (m: FleetReport) => void>();
  child.on("message", (m: FleetReport) => {
    waiters.get(m.type)?.(m);
    waiters.delete(m.type);
  });
  return {
    child,
    next(type, ms) {
      const report = new Promise<Extract<FleetReport, { type: typeof type }>>((r) =>
        waiters.set(type, r as (m: FleetReport) => void),
      );
      return ms === undefined ? report : within(report, ms, `sim ${type}`);
    },
    command: (c) => child.connected && child.send(c),
  };
}

/** Approves every agent through the agents service (32 at a time); returns the seconds it took. */
export async function approveAll(nc: NatsConnection, nodeIds: string[]): Promise<number> {
  const agents = rpcClient(nc, "agents", AgentsService, { timeoutMs: 10_000 });
  const started = performance.now();
  let i = 0;
  const worker = async () => {
    while (i < nodeIds.length) {
      const k = i++;
      await agents.setApproval({ nodeId: nodeIds[k]!, status: "approved", name: `sim-${k}` }, { actor: SYSTEM_ACTOR });
    }
  };
  await Promise.all(Array.from({ length: 32 }, worker));
  return (performance.now() - started) / 1000;
}
