import t from "tap";
import { createTestDatabase, eventually, freePort, startNats, startSystem } from "@orch/kit/testing";
import { agentPool } from "../../services/agents/test/harness.js";
import { startReceiver } from "../../services/notify/test/harness.js";

// A planned stop of the agents service (SIGTERM, as Ctrl-C on `npm run up` gives it) is not an
// incident: the disconnects it causes are recorded at info and reach no webhook and no inbox, not
// even when notify catches up after the restart. An agent lost for real still warns, through the
// same channel, which is also how the test knows notify has processed everything before it.
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const rx = await startReceiver();
t.teardown(() => rx.close());
const linkPort = await freePort();
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "audit", "agents", "notify", "gateway"],
  env: {
    ORCH_AGENTS_LINK_HOST: "127.0.0.1",
    ORCH_AGENTS_LINK_PORT: String(linkPort),
    ORCH_NOTIFY_ALLOW_PRIVATE_TARGETS: "true",
    ORCH_NOTIFY_POLL_MS: "100",
    ORCH_NOTIFY_OPERATORS_CACHE_MS: "0",
    ORCH_NOTIFY_CREDENTIALS_KEY: Buffer.alloc(32, 5).toString("hex"),
  },
});
const agents = agentPool();
t.teardown(() => agents.stop());

const token = await system.login(system.admin);
const api = (method: string, path: string, body?: unknown) =>
  system.api(method, path, { token, ...(body !== undefined ? { body } : {}) });

interface Hook {
  event_type: string;
  severity: string;
  metadata: { reason?: string };
}
const hooks = (): Hook[] => rx.got.map((r) => JSON.parse(r.body) as Hook);
const disconnects = () => hooks().filter((h) => h.event_type === "agent.disconnected");

t.test("stopping the agents service with an agent connected notifies nobody", async (t) => {
  // Every agent event down to info: only the unnotified flag can keep the planned disconnect out.
  const ch = await api("POST", "/api/v1/channels", {
    name: "agents-hook",
    channel_type: "webhook",
    config: { url: `${rx.url}/agents`, event_types: ["agent"], min_severity: "info" },
  });
  t.equal(ch.status, 201, ch.text);

  const agent = agents.spawn(["--server", `127.0.0.1:${linkPort}`]);
  const nodeId = await agent.nodeId();
  await eventually(async () => (await api("GET", `/api/v1/agents/${nodeId}`)).body?.connected === true, 20_000);
  t.equal((await api("POST", `/api/v1/agents/${nodeId}`, { status: "approved", name: "web-1" })).status, 200);

  await system.kill("agents", "SIGTERM");
  await system.start("agents");
  // The agent comes back by itself once the service is up again.
  const reconnects = await eventually(async () => {
    const r = await api("GET", "/api/v1/audit?event_type=agent.connected&limit=10");
    return r.body?.events?.length >= 2 ? r.body.events : undefined;
  }, 30_000);
  t.ok(reconnects.length >= 2, "connected before and after the restart");

  const planned = await eventually(async () => {
    const r = await api("GET", "/api/v1/audit?event_type=agent.disconnected&limit=10");
    return r.body?.events?.[0];
  }, 20_000);
  t.equal(planned.metadata.reason, "server_shutdown", "the stop is recorded");
  t.equal(planned.severity, "info", "at info");
  t.equal(planned.metadata.unnotified, true, "and flagged for no notification");

  // A real loss, after everything above: it warns through the same channel.
  await agent.signal("SIGKILL");
  const lost = await eventually(() => disconnects().find((h) => h.severity === "warning"), 30_000);
  t.equal(lost.metadata.reason, "link_lost");
  t.same(
    disconnects().map((h) => h.metadata.reason),
    ["link_lost"],
    "the webhook got the real loss and nothing about the planned stop",
  );
  t.ok(
    hooks().some((h) => h.event_type === "agent.connected"),
    "the channel did receive the agent's other (info) events",
  );

  const inbox = (await api("GET", "/api/v1/notifications")).body.notifications as {
    event_type: string;
    summary: string;
  }[];
  t.same(
    inbox.filter((n) => n.event_type === "agent.disconnected").map((n) => n.summary),
    ["agent web-1 disconnected (link_lost)"],
    "the inbox holds only the real loss",
  );
});
