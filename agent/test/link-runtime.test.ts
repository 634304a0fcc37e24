import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { AgentControlService } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import { createTestDatabase, eventually, freePort, startNats, testLinkTls } from "@orch/kit/testing";
import { grantsDb } from "../../services/agents/src/link/grants.js";
import { agentsClient, startAgentsService, type AgentsUnderTest } from "../../services/agents/test/harness.js";
import { controlFeature } from "../src/control.js";
import { createAgent } from "../src/daemon.js";
import { loadOrCreateIdentity } from "../src/identity.js";
import { createAgentLogger } from "../src/log.js";
import { parseOptions, type DaemonOptions } from "../src/options.js";
import type { AgentRuntime, Feature } from "../src/runtime.js";

// The AgentRuntime features use (serve, publish, subscribe, setAttribute), in process, over a real link.
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const port = await freePort();
let svc: AgentsUnderTest = await startAgentsService(nats, db, { link_port: port, metrics_interval_seconds: 1 });
const nc = await nats.connect("observer");
const { c, as } = agentsClient(nc);
const dir = mkdtempSync(join(tmpdir(), "orch-agent-rt-"));
t.teardown(() => rmSync(dir, { recursive: true, force: true }));
const lines: string[] = [];
const log = createAgentLogger("debug", (l) => void lines.push(l));

let rt: AgentRuntime | undefined;
const echo: Feature = (r) => {
  rt = r;
  r.subscribe("orch.term.rt1.in", (data) => r.publish("orch.term.rt1.out", new Uint8Array([...data].reverse())));
};
const options = parseOptions(
  ["--server", `127.0.0.1:${port}`, "--data-dir", dir, "--metrics-interval", "3600", "--ca", testLinkTls().caCert],
  {},
) as DaemonOptions;
const identity = loadOrCreateIdentity(dir, log);
// As if session rt1 had been opened on this agent: the link bridges only granted sessions.
await grantsDb.put(svc.deps.pool, identity.nodeId, { kind: "terminal", ref: "rt1" }, Date.now() + 3_600_000);
const agent = createAgent({ options, identity, log, features: [controlFeature, echo] });
await agent.start();
t.teardown(async () => {
  await agent.stop();
  await svc.stop();
});

const nodeId = identity.nodeId;
const connected = () =>
  eventually(async () => (await c.getAgent({ id: nodeId }, as).catch(() => undefined))?.connected);

async function roundTrip(): Promise<number[]> {
  const got: number[][] = [];
  const sub = nc.subscribe("orch.term.rt1.out", { callback: (_e, m) => void got.push([...m.data]) });
  await eventually(async () => {
    nc.publish("orch.term.rt1.in", new Uint8Array([1, 2, 3]));
    await nc.flush();
    return got.length > 0;
  });
  sub.unsubscribe();
  return got[0]!;
}

t.test("features are served: Ping through NATS once approved", async (t) => {
  await connected();
  await c.setApproval({ nodeId, status: "approved", name: "rt-agent" }, as);
  const ping = rpcClient(nc, "", AgentControlService, { timeoutMs: 3000, subjectBase: `orch.agent.${nodeId}` });
  await eventually(async () => (await ping.ping({ payload: "rt" }).catch(() => undefined))?.payload === "rt");
  t.equal(rt!.nodeId, nodeId);
  t.pass("control feature answers");
});

t.test("subscribe and publish go through the link", async (t) => {
  t.same(await roundTrip(), [3, 2, 1]);
});

t.test("setAttribute reaches the registry at once", async (t) => {
  rt!.setAttribute("feature_x", "on");
  const a = await eventually(async () => {
    const r = await c.getAgent({ id: nodeId }, as);
    return r.attributes.feature_x === "on" ? r : undefined;
  });
  t.ok(a.attributes.hostname, "the rest of the attributes are kept");
});

t.test("the server's metrics interval overrides the agent's own", async (t) => {
  // The agent asked for one sample an hour; the server (metrics_interval_seconds: 1) wants one a second.
  const n = await eventually(async () => {
    const s = (await c.getMetrics({ nodeId }, as)).samples;
    return s.length >= 3 ? s.length : undefined;
  }, 15_000);
  t.ok(n >= 3);
});

t.test("after the service restarts, subscriptions and attributes are restored", async (t) => {
  await svc.stop();
  svc = await startAgentsService(nats, db, { link_port: port, metrics_interval_seconds: 1 });
  await connected();
  t.same(await roundTrip(), [3, 2, 1], "re-subscribed after reconnecting");
  t.equal((await c.getAgent({ id: nodeId }, as)).attributes.feature_x, "on");
});
