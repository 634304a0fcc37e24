import t from "tap";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ed25519, eventually, publishTestRelease } from "@orch/kit/testing";
import { connectSimAgent, defaultAttributes, linkClient, simKey } from "../../../bench/lib/sim-agent.js";
import { call, login } from "./harness.js";
import { startAgentsStack } from "./agents-stack.js";

// The upgrade routes through the real gateway and agents service, with a releases.dir fixture and a
// simulated agent link (it does not serve Upgrade, so the upgrade ends upgrade_unsupported).
const releases = mkdtempSync(join(tmpdir(), "orch-gw-releases-"));
for (const version of ["1.2.3", "2.0.0"]) publishTestRelease(releases, version);
const stack = await startAgentsStack({ releases: { dir: releases } });
const grpc = linkClient(`127.0.0.1:${stack.agentsSvc.linkPort}`);
const key = simKey();
const sim = connectSimAgent(grpc, key, { attributes: defaultAttributes(0, key.nodeId), version: "1.2.3" });
t.teardown(async () => {
  sim.close();
  grpc.close();
  await stack.stop();
  rmSync(releases, { recursive: true, force: true });
});
await sim.welcome;
const token = await login(stack.gw.url, stack.admin);
const api = (method: string, path: string, body?: unknown) =>
  call(stack.gw.url, method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
if ((await api("POST", `/agents/${key.nodeId}`, { status: "approved", name: "sim-1" })).status !== 200)
  throw new Error("approve failed");

t.test("the registry flags the agent outdated (1.2.3 < 2.0.0)", async (t) => {
  const r = await api("GET", "/agents/sim-1");
  t.match(r.body, { version: "1.2.3", outdated: true });
});

t.test("bad and unknown versions: 400 invalid_version, 404 agent_version_not_found", async (t) => {
  t.match(await api("POST", "/agents/sim-1/upgrade", { version: "latest" }), {
    status: 400,
    body: { code: "invalid_version" },
  });
  t.match(await api("POST", "/agent-upgrades", { selector: "*", version: "9.9.9" }), {
    status: 404,
    body: { code: "agent_version_not_found" },
  });
  t.match(await api("POST", "/agent-upgrades", { version: "2.0.0" }), { status: 400 });
});

t.test("admin only", async (t) => {
  const op = ed25519();
  await api("POST", "/operators", { name: "olga", public_key: op.publicKeyHex, role: "operator" });
  const opToken = await login(stack.gw.url, op);
  const r = await call(stack.gw.url, "POST", "/api/v1/agent-upgrades", { token: opToken, body: { selector: "*" } });
  t.equal(r.status, 403);
  const l = await call(stack.gw.url, "GET", "/api/v1/agent-upgrades", { token: opToken });
  t.equal(r.status, 403);
  t.equal(l.status, 403);
});

t.test("upgrade by selector: 202, the agent refuses, the list shows it failed", async (t) => {
  const r = await api("POST", "/agent-upgrades", { selector: "name=sim-1" });
  t.equal(r.status, 202, JSON.stringify(r.body));
  t.match(r.body, {
    version: "2.0.0",
    skipped: 0,
    upgrades: [{ node_id: key.nodeId, name: "sim-1", from_version: "1.2.3" }],
  });
  const listed = await eventually(async () => {
    const l = await api("GET", "/agent-upgrades?node_id=sim-1");
    return l.body.upgrades?.[0]?.status === "failed" ? l.body : undefined;
  });
  t.match(listed, { has_more: false, upgrades: [{ reason: "upgrade_unsupported", to_version: "2.0.0" }] });
  const one = await api("POST", "/agents/sim-1/upgrade", { version: "1.2.3" });
  t.match(one, { status: 202, body: { upgrades: [], skipped: 1 } });
});
