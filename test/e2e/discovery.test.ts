import t, { type Test } from "tap";
import { createTestDatabase, ed25519, eventually, freePort, startNats, startSystem } from "@orch/kit/testing";
import { agentPool, collectEvents } from "../../services/agents/test/harness.js";

// Discovery (docs/agents.md#discovery) with real processes: POST /discover as an operator reaches a real agent
// (`--discover`) inside the configured discovery network (loopback here), is refused with a 403
// problem outside it, and can never pick another port. Nothing is ever sent outside 127.0.0.0/8:
// refused targets are refused before anything is sent. An admin's unicast outside the networks is
// shown inside a private network namespace by services/agents/test/discover-netns.test.ts.
// Needs `npm run build` (dist/main.js files).
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const linkPort = await freePort();
const discoveryPort = await freePort();
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "agents", "gateway"],
  env: {
    ORCH_AGENTS_LINK_HOST: "127.0.0.1",
    ORCH_AGENTS_LINK_PORT: String(linkPort),
    ORCH_AGENTS_DISCOVERY_PORT: String(discoveryPort),
    ORCH_AGENTS_DISCOVERY_NETWORKS: '["127.0.0.0/8"]',
  },
});
const agents = agentPool();
const nc = await nats.connect("e2e");
const ev = collectEvents(nc);
t.teardown(async () => {
  await agents.stop();
});
const adminToken = await system.login(system.admin);
const opKey = ed25519();
let opToken = "";
const discover = (token: string, target: string) => system.api("POST", "/api/v1/discover", { token, body: { target } });
const problem = (t: Test, r: { status: number; headers: Headers; body: any }, status: number, code: string) => {
  t.equal(r.status, status, `${status} ${code}`);
  t.match(r.headers.get("content-type"), /application\/problem\+json/);
  t.equal(r.body?.code, code);
};

t.test("an operator logs in", async (t) => {
  const added = await system.api("POST", "/api/v1/operators", {
    token: adminToken,
    body: { name: "olivia", public_key: opKey.publicKeyHex, role: "operator" },
  });
  t.equal(added.status, 201, added.text);
  opToken = await system.login(opKey);
});

t.test(
  "an operator's unicast outside the configured networks is 403; special space and other ports are refused",
  async (t) => {
    problem(t, await discover(opToken, `10.255.255.1:${discoveryPort}`), 403, "discovery_target_not_allowed");
    problem(t, await discover(opToken, `93.184.216.34:${discoveryPort}`), 403, "discovery_target_not_allowed");
    problem(t, await discover(adminToken, `[::1]:${discoveryPort}`), 403, "discovery_target_refused");
    problem(t, await discover(adminToken, `[::ffff:0:7f00:1]:${discoveryPort}`), 403, "discovery_target_refused");
    problem(t, await discover(opToken, `127.0.0.1:22`), 400, "discovery_port_not_allowed");
    problem(
      t,
      await discover(adminToken, `127.0.0.1:${discoveryPort === 65535 ? 1 : discoveryPort + 1}`),
      400,
      "discovery_port_not_allowed",
    );
    t.equal(ev.of("discovery.sent").length, 0, "nothing was sent");
  },
);

t.test(
  "an operator's discovery inside the configured network reaches a real agent, which shows up pending",
  async (t) => {
    const d = agents.spawn(["--discover", "--discovery-port", String(discoveryPort)]);
    const id = await d.nodeId();
    await d.waitFor((r) => r.msg === "waiting for a discovery datagram");
    const r = await discover(opToken, `127.0.0.1:${discoveryPort}`);
    t.equal(r.status, 202, r.text);
    t.match(r.body, { sent_to: [`127.0.0.1:${discoveryPort}`], announced: `127.0.0.1:${linkPort}` });
    const agent = await eventually(async () => {
      const a = await system.api("GET", `/api/v1/agents/${id}`, { token: opToken });
      return a.body?.connected === true ? a.body : undefined;
    }, 20_000);
    t.equal(agent.status, "pending");
    const sent = await ev.wait("discovery.sent");
    t.equal(sent.actor?.name, "olivia");
  },
);
