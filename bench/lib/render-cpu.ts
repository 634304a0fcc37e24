/**
 * The render cost of a version-2 module per agent, measured in the bench's own process with the
 * state service's renderer (engine/render.ts): the fan-out's state-service CPU includes it, but
 * mixed with everything else an operation costs.
 */
import { renderResources, type ModuleSource, type RenderAgent } from "../../services/state/src/engine/render.js";
import { parseModule } from "../../services/state/src/module/parse.js";

/** The 50-item list the --template-loop module loops over (the `defaults` value set). */
export const UPSTREAMS = Array.from({ length: 50 }, (_, i) => ({ host: `10.0.${i >> 4}.${i}`, port: 8000 + i }));

const agentOf = (i: number, values: Record<string, unknown>): RenderAgent => ({
  attributes: { hostname: `bench-${i}` },
  tags: { env: "bench" },
  values,
  nodeId: `node-${i}`,
  name: `bench-${i}`,
});

/** CPU µs per agent of rendering `source` for `agents`. */
function cpuPerAgent(source: ModuleSource, agents: readonly RenderAgent[]): number {
  const start = process.cpuUsage();
  for (const a of agents) renderResources([source], a, new Map());
  const used = process.cpuUsage(start);
  return (used.user + used.system) / agents.length;
}

/**
 * Prints the render CPU per agent twice: as the fan-out renders (every agent reads the same list,
 * rendered once and reused by the inputs it read) and with a different list per agent (every
 * agent rendered in full).
 */
export function printRenderCpu(content: string): void {
  const parsed = parseModule(content);
  const source: ModuleSource = { name: parsed.name, sha256: "bench", parsed };
  // The cost per agent does not depend on the fleet's size: a fixed sample keeps small runs honest.
  const n = 1000;
  const listsFrom = (first: number, count: number) =>
    Array.from({ length: count }, (_, i) => ({
      upstreams: UPSTREAMS.map((u) => ({ ...u, port: u.port + first + i })),
    }));
  // Warm-up, with lists of its own (a list rendered once is reused): the first renders pay for JIT compilation.
  cpuPerAgent(
    source,
    listsFrom(-200, 200).map((v, i) => agentOf(-i - 1, v)),
  );
  const shared = { upstreams: UPSTREAMS };
  const sharedUs = cpuPerAgent(
    source,
    Array.from({ length: n }, (_, i) => agentOf(i, shared)),
  );
  const ownUs = cpuPerAgent(
    source,
    listsFrom(0, n).map((v, i) => agentOf(i, v)),
  );
  console.log(
    `render CPU per agent (this process, ${n} agents, every resource of the module): ${sharedUs.toFixed(0)} µs as a fan-out renders it (the agents share the 50-item list); ${ownUs.toFixed(0)} µs with a different list per agent (the loop rendered for each)`,
  );
}
