/**
 * A fleet of simulated agents (bench/lib/sim-agent.ts) in one child process, driven over IPC, and the
 * bulk approval the benches run before measuring: shared by the agents and console benches.
 */
import { fileURLToPath } from "node:url";
import { AgentsService } from "@orch/contracts";
import { SYSTEM_ACTOR, rpcClient, type NatsConnection } from "@orch/kit";
import { forkFleet, type Fleet } from "./fork-fleet.js";
import type { FleetCommand, FleetReport } from "./sim-agent.js";

export { within } from "./fork-fleet.js";

const SIM = fileURLToPath(new URL("./sim-agent.ts", import.meta.url));

export type SimFleet = Fleet<FleetReport, FleetCommand>;

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
  return forkFleet<FleetReport, FleetCommand>(SIM, args);
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
