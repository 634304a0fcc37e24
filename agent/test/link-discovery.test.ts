import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { RemoteInfo } from "node:dgram";
import t from "tap";
import { createTestDatabase, eventually, freePort, startNats } from "@orch/kit/testing";
import { agentPool, agentsClient, collectEvents, startAgentsService } from "../../services/agents/test/harness.js";
import { SERVER_FILE, parseDiscovery } from "../src/discovery.js";

const from = (address: string, family: "IPv4" | "IPv6" = "IPv4"): RemoteInfo => ({
  address,
  family,
  port: 7444,
  size: 0,
});
const dgram = (o: unknown) => Buffer.from(typeof o === "string" ? o : JSON.stringify(o));

t.test("unit: discovery datagrams", async (t) => {
  t.equal(parseDiscovery(dgram({ type: "orch.discover", link: "orch.lan:7443" }), from("10.0.0.5")), "orch.lan:7443");
  t.equal(
    parseDiscovery(dgram({ type: "orch.discover", link: "0.0.0.0:7443" }), from("10.0.0.5")),
    "10.0.0.5:7443",
    "unspecified host = the sender",
  );
  t.equal(
    parseDiscovery(dgram({ type: "orch.discover", link: "[::]:7443" }), from("fe80::1", "IPv6")),
    "[fe80::1]:7443",
  );
  t.equal(
    parseDiscovery(dgram({ type: "orch.discover", link: "[2001:db8::1]:7443" }), from("10.0.0.5")),
    "[2001:db8::1]:7443",
  );
  for (const bad of [
    "not json",
    "null",
    "[]",
    { type: "other", link: "a:1" },
    { type: "orch.discover" },
    { type: "orch.discover", link: "no-port" },
    { type: "orch.discover", link: "h:99999" },
    { type: "orch.discover", link: 5 },
  ]) {
    t.equal(parseDiscovery(dgram(bad), from("10.0.0.5")), undefined, `ignored: ${JSON.stringify(bad)}`);
  }
  t.equal(parseDiscovery(Buffer.alloc(2000, 32), from("10.0.0.5")), undefined, "oversized datagrams are ignored");
});

t.test("an agent started with --discover connects after Discover and remembers the server", async (t) => {
  const nats = await startNats({ owner: t });
  const db = await createTestDatabase({ owner: t });
  const udp = await freePort();
  // Discovery goes only to configured networks and the configured port: here loopback and the test's port.
  const svc = await startAgentsService(nats, db, { discovery_port: udp, discovery_networks: ["127.0.0.0/8"] });
  const agents = agentPool();
  t.teardown(async () => {
    await agents.stop();
    await svc.stop();
  });
  const nc = await nats.connect("observer");
  const ev = collectEvents(nc);
  const { c, as } = agentsClient(nc);

  const a = agents.spawn(["--discover", "--discovery-port", String(udp)]);
  const id = await a.nodeId();
  await a.waitFor((r) => r.msg === "waiting for a discovery datagram");
  t.equal((await c.listAgents({}, as)).agents.length, 0, "nothing registered before discovery");

  const sent = await c.discover({ target: `127.0.0.1:${udp}` }, as);
  t.same(sent.sentTo, [`127.0.0.1:${udp}`]);
  t.equal(sent.announced, svc.server);
  const e = await ev.wait("discovery.sent");
  t.match(e.metadata, { sent_to: `127.0.0.1:${udp}`, broadcast: false, announced: svc.server });

  const agent = await eventually(async () => {
    const r = await c.getAgent({ id }, as).catch(() => undefined);
    return r?.connected ? r : undefined;
  });
  t.equal(agent.status, "pending", "it shows up pending");
  t.equal(readFileSync(join(a.dataDir, SERVER_FILE), "utf8").trim(), svc.server, "the server is saved in the data dir");

  await a.signal("SIGTERM");
  await eventually(async () => (await c.getAgent({ id }, as)).connected === false);
  const again = agents.spawn([], { dataDir: a.dataDir });
  await eventually(async () => (await c.getAgent({ id }, as)).connected);
  t.notOk(
    again.records().some((r) => r.msg === "waiting for a discovery datagram"),
    "a restart goes straight to the saved server",
  );
});

t.test("Discover refuses a malformed target and reports send failures", async (t) => {
  const nats = await startNats({ owner: t });
  const db = await createTestDatabase({ owner: t });
  const svc = await startAgentsService(nats, db);
  t.teardown(async () => {
    await svc.stop();
  });
  const nc = await nats.connect("observer");
  const { c, as } = agentsClient(nc);
  for (const target of ["nope", "host:0", "host:70000", "a b:1", "[zz]:1"]) {
    const err = await c.discover({ target }, as).then(
      () => undefined,
      (e: { code: string; reason: string; details: { field?: string } }) => e,
    );
    t.match(
      err,
      { code: "INVALID_ARGUMENT", reason: "invalid_target", details: { field: "target" } },
      `target ${target}`,
    );
  }
  const unresolvable = await c.discover({ target: "no-such-host.invalid:7444" }, as).then(
    () => undefined,
    (e: { code: string; reason: string }) => e,
  );
  t.match(unresolvable, { code: "INVALID_ARGUMENT", reason: "invalid_target", details: { field: "target" } });
});
