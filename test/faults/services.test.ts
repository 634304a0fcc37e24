import t from "tap";
import { createTestDatabase, startNats } from "@orch/kit/testing";
import { printFigures } from "./lib/figures.js";
import { checkAfterFault } from "./lib/invariants.js";
import { startMixedLoad } from "./lib/load.js";
import { startFaultStack } from "./lib/stack.js";

// SIGKILL every service in turn, gateway included, under a steady mixed load, restart it, and
// check that nothing acknowledged was lost or recorded twice and that clients only saw retryable
// answers. Needs `npm run build`.
const nats = await startNats();
const db = await createTestDatabase();
const stack = await startFaultStack({ name: "services", nats, db, agents: 3 });
t.teardown(async () => {
  await stack.stop();
  await db.drop();
  await nats.stop();
});

const load = startMixedLoad(stack);
const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));
await pause(3000);
const gatewayDownWindows: number[] = [];
/** From the restart to /status ok, per service: how long a SIGKILL keeps it away. */
const restartMs: Record<string, number> = {};
for (const [i, name] of stack.services.entries()) {
  if (name === "gateway") gatewayDownWindows.push(i);
  load.mark("fault");
  await stack.system.kill(name, "SIGKILL");
  const started = Date.now();
  await stack.restartService(name);
  load.mark("healed");
  restartMs[name] = Date.now() - started;
  await load.recovered();
  await pause(3000);
}
const report = await load.stop();

const figures = await checkAfterFault(t, stack, report, {
  scenario: "services-sigkill",
  faults: stack.services.length,
  gatewayDownWindows,
  // While the agents service restarts, the agents' links are down until they redial: a terminal
  // opened then is refused as such (the load reopens it).
  expected4xx: [{ status: 409, code: "agent_not_connected", kind: "terminal" }],
  settleMs: 45_000,
});
printFigures(figures);
t.comment(`restart to ready (ms): ${JSON.stringify(restartMs)}`);
t.ok(report.terminal.echoes > 0, `terminal echoes: ${JSON.stringify(report.terminal)}`);
