import t, { type Test } from "tap";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { create, toBinary } from "@bufbuild/protobuf";
import { AgentUpgradeReplySchema, type Request } from "@orch/contracts";
import { OrchError, cachedReleaseCatalog } from "@orch/kit";
import { createTestDatabase, eventually, publishTestRelease, startNats } from "@orch/kit/testing";
import { openLink, type Send } from "../../../agent/src/link/client.js";
import { upgradesDb } from "../src/db/upgrades.js";
import { upgradeHandlers } from "../src/handlers/upgrades.js";
import { expireUpgrades } from "../src/upgrades/deadline.js";
import {
  ADMIN,
  agentPool,
  agentsClient,
  collectEvents,
  memIdentity,
  quietLog,
  startAgentsService,
  testCaCredentials,
} from "./harness.js";

// UpgradeAgents / ListAgentUpgrades over real NATS and Postgres, with a releases.dir fixture, a
// real repo orch-agent (not installed: it refuses), stand-in links that accept, and the deadline
// job driven with an injected clock.

const releases = mkdtempSync(join(tmpdir(), "orch-releases-"));
const publish = (version: string) => publishTestRelease(releases, version);
publish("0.1.0");
publish("1.0.0");
publish("2.0.0");

const nats = await startNats();
const db = await createTestDatabase();
const started = await startAgentsService(nats, db, {}, { releases: { dir: releases, upgrade_deadline_seconds: 30 } });
const { deps, server } = started;
const nc = await nats.connect("caller");
const ev = collectEvents(nc);
const { c, as } = agentsClient(nc, 90_000);
const agents = agentPool();
t.teardown(async () => {
  await agents.stop();
  await started.stop();
  await db.drop();
  await nats.stop();
  rmSync(releases, { recursive: true, force: true });
});

async function refused(t: Test, p: Promise<unknown>, code: string, reason: string) {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof OrchError, `refused (${reason})`);
  t.equal((err as OrchError).code, code);
  t.equal((err as OrchError).reason, reason);
}

/** A stand-in agent link announcing `version`; answers Upgrade requests with `accept`. */
function fakeAgent(identity: ReturnType<typeof memIdentity>, version: string, accept: boolean) {
  const requests: Request[] = [];
  let up = false;
  const attempt = openLink({
    server,
    credentials: testCaCredentials(),
    identity,
    hello: { version, attributes: { hostname: `fake-${version}`, os: "linux" } },
    log: quietLog,
    handlers: {
      onWelcome() {
        up = true;
      },
      onRequest(r, send: Send) {
        requests.push(r);
        const reply = create(AgentUpgradeReplySchema, accept ? { accepted: true } : { reason: "checksum_mismatch" });
        send({ frame: { case: "response", value: { id: r.id, payload: toBinary(AgentUpgradeReplySchema, reply) } } });
      },
      onMessage() {},
    },
  });
  return { requests, up: () => eventually(() => up), close: () => attempt.close(), done: attempt.done };
}

async function approve(nodeId: string, name: string) {
  await c.setApproval({ nodeId, status: "approved", name }, as);
}

t.test("version checks: invalid 400, unknown 404", async (t) => {
  await refused(t, c.upgradeAgents({ selector: "*", version: "latest" }, as), "INVALID_ARGUMENT", "invalid_version");
  await refused(t, c.upgradeAgents({ selector: "*", version: "9.9.9" }, as), "NOT_FOUND", "agent_version_not_found");
  await refused(t, c.upgradeAgents({ version: "1.0.0" }, as), "INVALID_ARGUMENT", "invalid_selector");
  await refused(t, c.upgradeAgents({ nodeId: "nope", version: "1.0.0" }, as), "NOT_FOUND", "agent_not_found");
});

t.test("no published packages: 404 agent_packages_unavailable", async (t) => {
  const empty = mkdtempSync(join(tmpdir(), "orch-releases-empty-"));
  t.teardown(() => rmSync(empty, { recursive: true, force: true }));
  const h = upgradeHandlers(deps, cachedReleaseCatalog(empty, deps.clock));
  const ctx = { actor: ADMIN, requestId: "r", deadline: Date.now() + 5000, log: deps.log };
  await refused(
    t,
    h.upgradeAgents({ selector: "*" } as never, ctx) as Promise<unknown>,
    "NOT_FOUND",
    "agent_packages_unavailable",
  );
});

t.test("a repo orch-agent (not installed) refuses: failed upgrade_unsupported with an event", async (t) => {
  const a = agents.spawn(["--server", server]);
  const nodeId = await a.nodeId();
  await eventually(async () => (await c.getAgent({ id: nodeId }, as)).connected);
  await approve(nodeId, "repo-agent");
  const agent = await c.getAgent({ id: nodeId }, as);
  t.equal(agent.version, "0.1.0");
  t.equal(agent.outdated, true, "0.1.0 < latest 2.0.0");

  const res = await c.upgradeAgents({ nodeId: "repo-agent", version: "1.0.0" }, as);
  t.equal(res.version, "1.0.0");
  t.equal(res.upgrades.length, 1);
  const row = await eventually(async () => {
    const r = await upgradesDb.byId(deps.pool, res.upgrades[0]!.id);
    return r?.status === "failed" ? r : undefined;
  });
  t.match(row, { from_version: "0.1.0", to_version: "1.0.0", reason: "upgrade_unsupported", requested_by: ADMIN.id });
  t.ok(await ev.wait("agent.upgrade.requested", nodeId));
  const failed = await ev.wait("agent.upgrade.failed", nodeId);
  t.equal(failed.metadata?.reason, "upgrade_unsupported");

  const skip = await c.upgradeAgents({ nodeId, version: "0.1.0" }, as);
  t.same([skip.upgrades.length, skip.skipped], [0, 1], "already on the version: skipped");
  await a.signal("SIGTERM");
});

t.test("accepted, then a link up on the version: succeeded", async (t) => {
  const id = memIdentity();
  const v1 = fakeAgent(id, "1.0.0", true);
  await v1.up();
  await approve(id.nodeId, "fake-ok");
  const res = await c.upgradeAgents({ selector: "name=fake-ok" }, as);
  t.equal(res.version, "2.0.0", "empty version = latest");
  t.match(res.upgrades, [{ nodeId: id.nodeId, status: "requested", fromVersion: "1.0.0", toVersion: "2.0.0" }]);
  t.equal(v1.requests.length, 1);
  v1.close();
  await v1.done;
  const v2 = fakeAgent(id, "2.0.0", true);
  t.teardown(() => v2.close());
  await v2.up();
  const done = await eventually(async () => {
    const r = await upgradesDb.byId(deps.pool, res.upgrades[0]!.id);
    return r?.status === "succeeded" ? r : undefined;
  });
  t.ok(done.finished_at);
  t.ok(await ev.wait("agent.upgrade.succeeded", id.nodeId));
  t.equal((await c.getAgent({ id: id.nodeId }, as)).outdated, false);
});

t.test("refused by the agent and unreachable agents fail with the reason", async (t) => {
  const bad = memIdentity();
  const link = fakeAgent(bad, "1.0.0", false);
  await link.up();
  await approve(bad.nodeId, "fake-bad");
  const gone = memIdentity();
  const g = fakeAgent(gone, "1.0.0", true);
  await g.up();
  await approve(gone.nodeId, "fake-gone");
  g.close();
  await g.done;
  await eventually(async () => !(await c.getAgent({ id: gone.nodeId }, as)).connected);
  const res = await c.upgradeAgents({ selector: "name in (fake-bad, fake-gone)", version: "2.0.0" }, as);
  t.equal(res.upgrades.length, 2);
  const byNode = Object.fromEntries(res.upgrades.map((u) => [u.nodeId, u]));
  t.match(byNode[bad.nodeId], { status: "failed", reason: "checksum_mismatch" });
  t.match(byNode[gone.nodeId], { status: "failed", reason: "agent_unreachable" });
  link.close();

  const list = await c.listAgentUpgrades({ nodeId: "fake-bad" }, as);
  t.equal(list.upgrades.length, 1);
  const page = await c.listAgentUpgrades({ limit: 2 }, as);
  t.equal(page.upgrades.length, 2);
  t.ok(page.nextCursor, "more pages");
  const rest = await c.listAgentUpgrades({ limit: 50, cursor: page.nextCursor }, as);
  t.ok(
    rest.upgrades.every((u) => u.id < page.upgrades[1]!.id),
    "newest first, keyset paging",
  );
});

t.test("deadline job: open upgrades past deadline_at fail with timeout (injected clock)", async (t) => {
  const id = memIdentity();
  const link = fakeAgent(id, "1.0.0", true);
  t.teardown(() => link.close());
  await link.up();
  await approve(id.nodeId, "fake-slow");
  const res = await c.upgradeAgents({ nodeId: id.nodeId, version: "2.0.0" }, as);
  const row = res.upgrades[0]!;
  t.equal(row.status, "requested");
  const early = await expireUpgrades({ events: deps.events, clock: { now: () => row.deadlineAt - 1 }, log: deps.log });
  t.equal(early, 0, "not before the deadline");
  const n = await expireUpgrades({ events: deps.events, clock: { now: () => row.deadlineAt + 1 }, log: deps.log });
  t.equal(n, 1);
  t.match(await upgradesDb.byId(deps.pool, row.id), { status: "failed", reason: "timeout" });
  const failed = await ev.wait("agent.upgrade.failed", id.nodeId);
  t.equal(failed.metadata?.reason, "timeout");
});
