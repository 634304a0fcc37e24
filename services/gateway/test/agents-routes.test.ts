import t, { type Test } from "tap";
import { createSocket } from "node:dgram";
import { fromBinary } from "@bufbuild/protobuf";
import { AuditEventSchema, type AuditEvent } from "@orch/contracts";
import { ed25519, eventually } from "@orch/kit/testing";
import {
  connectSimAgent,
  defaultAttributes,
  linkClient,
  simKey,
  type SimAgent,
  type SimKey,
} from "../../../bench/lib/sim-agent.js";
import { validTarget } from "../src/routes/agents-schemas.js";
import { call, login } from "./harness.js";
import { startAgentsStack } from "./agents-stack.js";

// The real agents service in-process, real gRPC links from simulated agents, the real gateway.
// Unicast discovery goes to agents.discovery_port only, inside agents.discovery_networks (loopback here).
const discoverySock = createSocket("udp4");
await new Promise<void>((r) => discoverySock.bind(0, "127.0.0.1", r));
discoverySock.unref();
const stack = await startAgentsStack({
  agents: { discovery_port: discoverySock.address().port, discovery_networks: ["127.0.0.0/8"] },
});
const { nats, admin, agentsSvc, gw } = stack;
const grpc = linkClient(`127.0.0.1:${agentsSvc.linkPort}`);
const sims: SimAgent[] = [];
// Every request that reaches the agents service passes here: proves refused input never left the gateway.
const spy = await nats.connect("spy");
const busSubjects: string[] = [];
spy.subscribe("orch.agents.>", { callback: (_e, m) => void busSubjects.push(m.subject) });
const audit: AuditEvent[] = [];
spy.subscribe("audit.>", { callback: (_e, m) => void audit.push(fromBinary(AuditEventSchema, m.data)) });
t.teardown(async () => {
  for (const s of sims) s.close();
  grpc.close();
  await stack.stop();
});

const token = await login(gw.url, admin);
const NODE = "0123456789abcdef0123456789abcdef";

function sim(key: SimKey = simKey(), i = sims.length): SimAgent {
  const a = connectSimAgent(grpc, key, {
    attributes: defaultAttributes(i, key.nodeId),
    version: "1.2.3",
    handshakeTimeoutMs: 10_000,
  });
  sims.push(a);
  return a;
}

const problem = (t: Test, r: { status: number; type: string; body: any }, code: string, field: string) => {
  t.equal(r.status, 400, `400 ${code}`);
  t.match(r.type, /application\/problem\+json/);
  t.equal(r.body?.code, code);
  t.equal(r.body?.errors?.[0]?.field, field, `names field ${field}`);
  t.match(r.body?.detail, field);
};

t.test("unit: discovery targets are host:port with a valid host and port", async (t) => {
  for (const ok of [
    "127.0.0.1:7444",
    "10.0.0.255:1",
    "[::1]:7444",
    "[fe80::1]:65535",
    "agent-1.example.com:7444",
    "localhost:7444",
  ])
    t.ok(validTarget(ok), ok);
  for (const bad of [
    "127.0.0.1",
    "127.0.0.1:0",
    "127.0.0.1:65536",
    "256.1.1.1:7444",
    "1.2.3:7444",
    "::1:7444",
    "[zz::1]:7444",
    "host:port",
    ":7444",
    "a..b:7444",
    "-a.com:7444",
    "host:7444/x",
    " host:7444",
  ])
    t.notOk(validTarget(bad), bad);
});

t.test("bad input is a 400 naming the field, and nothing reaches the agents service", async (t) => {
  const before = busSubjects.length;
  const approve = (body: unknown, ref = NODE) => call(gw.url, "POST", `/api/v1/agents/${ref}`, { token, body });
  problem(t, await approve({ status: "approved" }), "name_required", "name");
  problem(t, await approve({ status: "approved", name: null }), "name_required", "name");
  problem(t, await approve({ status: "approved", name: "" }), "name_required", "name");
  for (const name of ["Web-1", "web_1", "-web", "web-", "a".repeat(64), "web.1"])
    problem(t, await approve({ status: "approved", name }), "invalid_name", "name");
  problem(t, await approve({ status: "maybe" }), "invalid_request", "status");
  problem(t, await approve({ status: "approved", name: "web-1" }, "Not_An_Id"), "invalid_request", "node_id");

  const setTag = (key: string, body: unknown) =>
    call(gw.url, "PUT", `/api/v1/agents/${NODE}/tags/${key}`, { token, body });
  for (const key of ["Env", "-env", "_env", "e".repeat(64), "env%20x", "%C3%A9"])
    problem(t, await setTag(key, { value: "x" }), "invalid_tag_key", "key");
  problem(t, await setTag("env", { value: "x".repeat(256) }), "invalid_tag_value", "value");
  problem(t, await setTag("env", { value: "line\nbreak" }), "invalid_tag_value", "value");
  problem(t, await setTag("env", { value: "bell\u0007" }), "invalid_tag_value", "value");
  problem(t, await setTag("env", { value: "c1\u0085" }), "invalid_tag_value", "value");
  problem(t, await setTag("env", {}), "invalid_request", "value");
  problem(t, await setTag("env", { value: 5 }), "invalid_request", "value");
  problem(t, await call(gw.url, "DELETE", `/api/v1/agents/${NODE}/tags/BAD`, { token }), "invalid_tag_key", "key");

  const replace = (tags: unknown) => call(gw.url, "PUT", `/api/v1/agents/${NODE}/tags`, { token, body: { tags } });
  problem(t, await replace({ ok: "1", Bad: "2" }), "invalid_tag_key", "tags.Bad");
  problem(t, await replace({ ok: "tab\there" }), "invalid_tag_value", "tags.ok");
  problem(
    t,
    await replace(Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, "v"]))),
    "too_many_tags",
    "tags",
  );
  problem(t, await replace(["env=prod"]), "invalid_request", "tags");
  problem(t, await replace({ env: 1 }), "invalid_request", "tags.env");

  problem(t, await call(gw.url, "GET", "/api/v1/agents?status=lost", { token }), "invalid_request", "status");
  problem(t, await call(gw.url, "GET", "/api/v1/agents?limit=0", { token }), "invalid_request", "limit");
  problem(t, await call(gw.url, "GET", "/api/v1/agents?limit=501", { token }), "invalid_request", "limit");
  // One code for a bad cursor on every list (docs/http-api.md#cursors).
  problem(t, await call(gw.url, "GET", "/api/v1/agents?cursor=zzz", { token }), "invalid_cursor", "cursor");

  const metrics = (q: string) => call(gw.url, "GET", `/api/v1/agents/${NODE}/metrics?${q}`, { token });
  problem(t, await metrics("since=yesterday"), "invalid_request", "since");
  problem(t, await metrics("until=2025-13-01T00:00:00Z"), "invalid_request", "until");
  problem(t, await metrics("limit=1001"), "invalid_request", "limit");
  problem(t, await metrics("limit=0"), "invalid_request", "limit");
  problem(t, await metrics("since=2025-01-02T00:00:00Z&until=2025-01-01T00:00:00Z"), "invalid_range", "since");

  for (const target of ["nope", "127.0.0.1", "127.0.0.1:0", "127.0.0.1:99999", "300.0.0.1:7444", "[::1]", "a b:7444"]) {
    problem(t, await call(gw.url, "POST", "/api/v1/discover", { token, body: { target } }), "invalid_target", "target");
  }
  problem(
    t,
    await call(gw.url, "POST", "/api/v1/discover", { token, body: { target: 7444 } }),
    "invalid_request",
    "target",
  );
  await spy.flush();
  t.same(busSubjects.slice(before), [], "no request reached orch.agents.*");
});

t.test("every agents route requires a token", async (t) => {
  const anon = [
    ["GET", "/api/v1/agents"],
    ["POST", `/api/v1/agents/${NODE}`],
    ["DELETE", `/api/v1/agents/${NODE}`],
    ["PUT", `/api/v1/agents/${NODE}/tags/env`],
    ["GET", "/api/v1/tags"],
    ["POST", "/api/v1/discover"],
  ] as const;
  for (const [method, path] of anon)
    t.equal(
      (
        await call(
          gw.url,
          method,
          path,
          method === "GET" || method === "DELETE" ? {} : { body: { status: "approved" } },
        )
      ).status,
      401,
      `${method} ${path}`,
    );
});

const [alpha, bravo, charlie] = [sim(), sim(), sim()];
const byId = (a: SimAgent) => `/api/v1/agents/${a.nodeId}`;

t.test("connected agents are listed as pending with their attributes, paged by node id", async (t) => {
  for (const a of [alpha, bravo, charlie]) t.equal((await a.welcome).status, "pending");
  const all = await call(gw.url, "GET", "/api/v1/agents", { token });
  t.equal(all.status, 200);
  t.equal(all.body.has_more, false);
  t.equal(all.body.next_cursor, null);
  const ids = [alpha, bravo, charlie].map((a) => a.nodeId).sort();
  t.same(
    all.body.agents.map((a: { node_id: string }) => a.node_id),
    ids,
    "ordered by node id",
  );
  const a = all.body.agents.find((x: { node_id: string }) => x.node_id === alpha.nodeId);
  t.match(a, {
    name: null,
    status: "pending",
    tags: {},
    connected: true,
    address: "127.0.0.1",
    version: "1.2.3",
    public_key: alpha.key.publicKeyHex,
  });
  t.match(a.attributes, { hostname: "sim-0", os: "linux", arch: "x64", cpus: "2", agent_version: "0.0.0-sim" });
  t.match(a.first_seen, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  t.match(a.last_seen, /Z$/);

  const p1 = await call(gw.url, "GET", "/api/v1/agents?limit=2", { token });
  t.same(
    p1.body.agents.map((x: { node_id: string }) => x.node_id),
    ids.slice(0, 2),
  );
  t.equal(p1.body.has_more, true);
  t.equal(p1.body.next_cursor, ids[1]);
  const p2 = await call(gw.url, "GET", `/api/v1/agents?limit=2&cursor=${p1.body.next_cursor}`, { token });
  t.same(
    p2.body.agents.map((x: { node_id: string }) => x.node_id),
    ids.slice(2),
  );
  t.equal(p2.body.has_more, false);
  t.same((await call(gw.url, "GET", "/api/v1/agents?status=approved", { token })).body.agents, []);
  t.equal((await call(gw.url, "GET", "/api/v1/agents?status=pending", { token })).body.agents.length, 3);

  const attrs = await call(gw.url, "GET", `${byId(bravo)}/attributes`, { token });
  t.equal(attrs.status, 200);
  t.same(attrs.body, { node_id: bravo.nodeId, attributes: defaultAttributes(1, bravo.nodeId) });
  const missing = await call(gw.url, "GET", `/api/v1/agents/${NODE}`, { token });
  t.equal(missing.status, 404);
  t.equal(missing.body.code, "agent_not_found");
});

t.test("approve: any operator names an agent once; the name is unique and immutable", async (t) => {
  // Approval is an operator action (not admin-only): a plain operator does it, and the audit event names them.
  const opKey = ed25519();
  t.equal(
    (
      await call(gw.url, "POST", "/api/v1/operators", {
        token,
        body: { name: "olga", public_key: opKey.publicKeyHex, role: "operator" },
      })
    ).status,
    201,
  );
  const opToken = await login(gw.url, opKey);
  const olga = (await call(gw.url, "GET", "/api/v1/auth/whoami", { token: opToken })).body;

  const r = await call(gw.url, "POST", byId(alpha), { token: opToken, body: { status: "approved", name: "web-1" } });
  t.equal(r.status, 200, r.text);
  t.match(r.body, { node_id: alpha.nodeId, name: "web-1", status: "approved", connected: true });
  await eventually(() => alpha.lastWelcome()?.status === "approved", 5000);
  t.equal(alpha.lastWelcome()?.name, "web-1", "the link got a fresh Welcome with the name");
  const ev = await eventually(
    () => audit.find((e) => e.eventType === "agent.approved" && e.target?.id === alpha.nodeId),
    5000,
  );
  t.match(ev.actor, { id: olga.id, name: "olga", type: "operator" });

  const byName = await call(gw.url, "GET", "/api/v1/agents/web-1", { token });
  t.equal(byName.body.node_id, alpha.nodeId, "the name resolves like the node id");

  const taken = await call(gw.url, "POST", byId(bravo), { token, body: { status: "approved", name: "web-1" } });
  t.equal(taken.status, 409);
  t.equal(taken.body.code, "name_taken");
  const renamed = await call(gw.url, "POST", byId(alpha), { token, body: { status: "approved", name: "web-2" } });
  t.equal(renamed.status, 409);
  t.equal(renamed.body.code, "name_immutable");
  const again = await call(gw.url, "POST", "/api/v1/agents/web-1", {
    token,
    body: { status: "approved", name: "web-1" },
  });
  t.equal(again.status, 200, "re-approving with the same name is a no-op");
  t.equal(
    (await call(gw.url, "GET", byId(bravo), { token })).body.status,
    "pending",
    "the refused approval changed nothing",
  );
  const unknown = await call(gw.url, "POST", `/api/v1/agents/${NODE}`, {
    token,
    body: { status: "approved", name: "ghost" },
  });
  t.equal(unknown.status, 404);
  t.equal(unknown.body.code, "agent_not_found");
});

t.test("reject ignores the name, refuses the link; only a rejected agent can be deleted", async (t) => {
  const notRejected = await call(gw.url, "DELETE", byId(alpha), { token });
  t.equal(notRejected.status, 409);
  t.equal(notRejected.body.code, "agent_not_rejected");
  t.equal((await call(gw.url, "GET", byId(alpha), { token })).status, 200, "still there");

  const r = await call(gw.url, "POST", byId(charlie), { token, body: { status: "rejected", name: "Not A Name!" } });
  t.equal(r.status, 200, r.text);
  t.match(r.body, { status: "rejected", name: null });
  t.equal(await charlie.ended, "agent_rejected", "the live link was refused");
  const retry = sim(charlie.key);
  await t.rejects(retry.welcome, { message: "agent_rejected" }, "a rejected agent cannot connect again");

  const del = await call(gw.url, "DELETE", byId(charlie), { token });
  t.equal(del.status, 204);
  t.equal(del.text, "");
  t.equal((await call(gw.url, "GET", byId(charlie), { token })).status, 404);
  t.equal((await call(gw.url, "DELETE", byId(charlie), { token })).status, 404);
  t.ok(
    await eventually(() => audit.find((e) => e.eventType === "agent.removed" && e.target?.id === charlie.nodeId), 5000),
  );
});

t.test("tags: set one, replace all, delete one (200 with the agent), list distinct keys and values", async (t) => {
  const set = await call(gw.url, "PUT", "/api/v1/agents/web-1/tags/env", { token, body: { value: "prod" } });
  t.equal(set.status, 200, set.text);
  t.same(set.body.tags, { env: "prod" });
  const slash = await call(gw.url, "PUT", `/api/v1/agents/web-1/tags/${encodeURIComponent("team/web")}`, {
    token,
    body: { value: "Ops — Zürich" },
  });
  t.same(
    slash.body.tags,
    { env: "prod", "team/web": "Ops — Zürich" },
    "a '/' key travels as %2F; values are any printable text",
  );
  t.equal((await call(gw.url, "PUT", `${byId(bravo)}/tags/env`, { token, body: { value: "staging" } })).status, 200);

  const replaced = await call(gw.url, "PUT", "/api/v1/agents/web-1/tags", {
    token,
    body: { tags: { env: "prod", tier: "1", empty: "" } },
  });
  t.equal(replaced.status, 200);
  t.same(replaced.body.tags, { empty: "", env: "prod", tier: "1" }, "replace drops team/web");

  const list = await call(gw.url, "GET", "/api/v1/tags", { token });
  t.equal(list.status, 200);
  t.same(list.body, { tags: { empty: [""], env: ["prod", "staging"], tier: ["1"] } });

  const del = await call(gw.url, "DELETE", "/api/v1/agents/web-1/tags/tier", { token });
  t.equal(del.status, 200);
  t.same(del.body.tags, { empty: "", env: "prod" });
  const gone = await call(gw.url, "DELETE", "/api/v1/agents/web-1/tags/tier", { token });
  t.equal(gone.status, 404);
  t.equal(gone.body.code, "tag_not_found");
  const none = await call(gw.url, "PUT", `/api/v1/agents/${NODE}/tags/env`, { token, body: { value: "x" } });
  t.equal(none.status, 404);
  t.ok(audit.some((e) => e.eventType === "agent.tags.updated" && e.target?.id === alpha.nodeId));
});

t.test("metrics: history newest first with since/until/limit, latest = newest", async (t) => {
  const none = await call(gw.url, "GET", `${byId(bravo)}/metrics/latest`, { token });
  t.equal(none.status, 404);
  t.equal(none.body.code, "no_metrics");
  t.same((await call(gw.url, "GET", `${byId(bravo)}/metrics`, { token })).body, { node_id: bravo.nodeId, samples: [] });

  const start = new Date().toISOString();
  for (let i = 0; i < 3; i++) {
    alpha.sendMetrics();
    await new Promise((r) => setTimeout(r, 5));
  }
  const hist = await eventually(
    async () => {
      const r = await call(gw.url, "GET", "/api/v1/agents/web-1/metrics", { token });
      return r.body.samples?.length === 3 ? r : undefined;
    },
    10_000,
    100,
  );
  t.equal(hist.body.node_id, alpha.nodeId, "a name is answered with the node id");
  const times = hist.body.samples.map((s: { taken_at: string }) => Date.parse(s.taken_at));
  t.same(
    times,
    [...times].sort((a, b) => b - a),
    "newest first",
  );
  t.match(hist.body.samples[0], {
    memory_total: 4 * 2 ** 30,
    disk_total: 64 * 2 ** 30,
    uptime_seconds: 3600,
    cpu_percent: Number,
  });

  const latest = await call(gw.url, "GET", `${byId(alpha)}/metrics/latest`, { token });
  t.equal(latest.status, 200);
  t.same(latest.body, { node_id: alpha.nodeId, ...hist.body.samples[0] });

  t.equal((await call(gw.url, "GET", `${byId(alpha)}/metrics?limit=1`, { token })).body.samples.length, 1);
  const until = hist.body.samples[0].taken_at;
  t.equal(
    (await call(gw.url, "GET", `${byId(alpha)}/metrics?since=${start}&until=${until}`, { token })).body.samples.length,
    2,
    "until is exclusive",
  );
  t.equal(
    (
      await call(gw.url, "GET", `${byId(alpha)}/metrics?since=${new Date(Date.now() + 60_000).toISOString()}`, {
        token,
      })
    ).body.samples.length,
    0,
  );
  t.equal((await call(gw.url, "GET", `/api/v1/agents/${NODE}/metrics`, { token })).status, 404);
});

t.test("discover: unicast to a target answers 202 with where it went and what it announced", async (t) => {
  const sock = discoverySock;
  const got = new Promise<string>((r) => sock.once("message", (m) => r(m.toString())));
  t.teardown(() => sock.close());
  const target = `127.0.0.1:${sock.address().port}`;
  const r = await call(gw.url, "POST", "/api/v1/discover", { token, body: { target } });
  t.equal(r.status, 202, r.text);
  t.same(r.body, { sent_to: [target], announced: `127.0.0.1:${agentsSvc.linkPort}` });
  t.match(JSON.parse(await got), { link: `127.0.0.1:${agentsSvc.linkPort}` });
  t.ok(await eventually(() => audit.find((e) => e.eventType === "discovery.sent"), 5000));
});
