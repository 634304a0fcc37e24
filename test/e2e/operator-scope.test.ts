import t from "tap";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { AgentsService, AuditEventSchema, StateService, TerminalService, type AuditEvent } from "@orch/contracts";
import { OrchError, rpcClient, type Actor } from "@orch/kit";
import { createTestDatabase, ed25519, eventually, freePort, startNats, startSystem } from "@orch/kit/testing";
import { agentPool } from "../../services/agents/test/harness.js";

// Scoped operator access (docs/access.md) with real processes (auth, agents, secrets, state, terminal,
// gateway) and real orch-agent daemons tagged role=web and role=db, plus one left pending.
// Needs `npm run build`.
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const linkPort = await freePort();
const root = mkdtempSync(join(tmpdir(), "orch-e2e-scope-"));
t.teardown(() => rmSync(root, { recursive: true, force: true }));
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "agents", "secrets", "state", "terminal", "gateway"],
  env: {
    ORCH_AGENTS_LINK_HOST: "127.0.0.1",
    ORCH_AGENTS_LINK_PORT: String(linkPort),
    ORCH_SECRETS_KEYS: `k1:${Buffer.alloc(32, 7).toString("base64")}`,
    ORCH_TERMINAL_TRANSCRIPT_DIR: root,
    ORCH_STATE_OPERATION_TIMEOUT_SECONDS: "15",
  },
});
const agents = agentPool();
const bus = await nats.connect("e2e-scope");
const updates: AuditEvent[] = [];
const sub = bus.subscribe("audit.operator.updated", {
  callback: (_e, m) => void updates.push(fromBinary(AuditEventSchema, m.data)),
});
t.teardown(async () => {
  sub.unsubscribe();
  await bus.close();
  await agents.stop();
});

type Res = Awaited<ReturnType<typeof system.api>>;
const admin = await system.login(system.admin);
const as = (token: string) => (method: string, path: string, body?: unknown) =>
  system.api(method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
const adminApi = as(admin);
const must = async (p: Promise<Res>, status: number) => {
  const r = await p.catch((err: unknown) => {
    // A service that died says why in its output.
    throw new Error(`${String(err)}\n${system.output().split("\n").slice(-40).join("\n")}`);
  });
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
};

const server = `127.0.0.1:${linkPort}`;
const spawn = () => agents.spawn(["--server", server]);
const procs = { web: spawn(), db: spawn(), pending: spawn() };
const ids = { web: await procs.web.nodeId(), db: await procs.db.nodeId(), pending: await procs.pending.nodeId() };
for (const id of Object.values(ids)) {
  await eventually(async () => (await adminApi("GET", `/agents/${id}`)).body?.connected === true, 20_000);
}
for (const role of ["web", "db"] as const) {
  await must(adminApi("POST", `/agents/${ids[role]}`, { status: "approved", name: `${role}-1` }), 200);
  await must(adminApi("PUT", `/agents/${ids[role]}/tags`, { tags: { role } }), 200);
}
await must(
  adminApi("POST", "/modules", {
    name: "marker",
    content: [
      "name: marker",
      "resources:",
      "  - id: marker",
      "    type: file",
      `    path: ${root}/{{ tags.role }}.txt`,
      '    content: "managed\\n"',
      "",
    ].join("\n"),
  }),
  201,
);
await must(adminApi("POST", "/assignments", { name: "everyone", selector: "*", modules: ["marker"] }), 201);
// An operation and a drift-able snapshot on the db agent, made by an admin: a scoped operator must
// not reach them even by their exact ids.
const dbOp = await must(adminApi("POST", `/agents/${ids.db}/apply?wait=20`, { modules: ["marker"] }), 200);
if (dbOp.status !== "succeeded") throw new Error(`admin apply to db: ${JSON.stringify(dbOp)}`);
const dbRun = await must(adminApi("POST", "/assignments/everyone/apply?wait=30", {}), 200);

const keys = { webOp: ed25519(), plain: ed25519() };
const wendyBody = { name: "wendy", public_key: keys.webOp.publicKeyHex, role: "operator", agent_selector: "role=web" };
const webOpRow = await must(adminApi("POST", "/operators", wendyBody), 201);
await must(adminApi("POST", "/operators", { name: "pat", public_key: keys.plain.publicKeyHex, role: "operator" }), 201);
const wendy = as(await system.login(keys.webOp));
const pat = as(await system.login(keys.plain));

t.test("the operators API sets and clears the selector: admin only, validated", async (t) => {
  t.equal(webOpRow.agent_selector, "role=web", "created with a selector");
  t.equal((await adminApi("GET", "/operators/pat")).body.agent_selector, null, "unscoped operators show null");
  const denied = await pat("PATCH", "/operators/pat", { agent_selector: "role=web" });
  t.equal(denied.status, 403, "an operator cannot change scopes");
  t.equal((await adminApi("GET", "/operators/pat")).body.agent_selector, null, "nothing changed on the refusal");
  const bad = await adminApi("PATCH", "/operators/pat", { agent_selector: "role=(web" });
  t.equal(bad.status, 400);
  t.equal(bad.body.code, "invalid_selector");
  t.match(bad.headers.get("content-type"), /application\/problem\+json/);
  const nul = await adminApi("PATCH", "/operators/pat", { agent_selector: "role=w\u0000eb" });
  t.equal(nul.status, 400, "a NUL byte is a 400, not a 500");
  const badCreate = await adminApi("POST", "/operators", {
    name: "x1",
    public_key: ed25519().publicKeyHex,
    agent_selector: "role in web",
  });
  t.equal(badCreate.body.code, "invalid_selector", "POST validates too");
  const onAdmin = await adminApi("POST", "/operators", {
    name: "x2",
    public_key: ed25519().publicKeyHex,
    role: "admin",
    agent_selector: "role=web",
  });
  t.equal(onAdmin.status, 400);
  t.equal(onAdmin.body.code, "admin_cannot_be_scoped", "admins are unscoped");
  t.equal((await adminApi("GET", "/operators/x2")).status, 404, "the refused admin was not created");
  const set = await must(adminApi("PATCH", "/operators/pat", { agent_selector: "role  =  db" }), 200);
  t.equal(set.agent_selector, "role = db", "whitespace is folded");
  const seen = (await pat("GET", "/agents")).body.agents.map((a: { node_id: string }) => a.node_id);
  t.same(seen, [ids.db], "the new scope holds at once (cached principals dropped)");
  const cleared = await must(adminApi("PATCH", "/operators/pat", { agent_selector: null }), 200);
  t.equal(cleared.agent_selector, null, "null clears");
  await eventually(() => updates.length >= 2, 15_000);
  t.same(
    updates.map((e) => [e.eventType, e.target?.name, e.metadata?.agent_selector]),
    [
      ["operator.updated", "pat", "role = db"],
      ["operator.updated", "pat", null],
    ],
    "operator.updated for the set and the clear, none for the refusals",
  );
  t.equal((await pat("GET", "/agents")).body.agents.length, 3, "cleared: every agent again");
});

t.test("lists show only in-scope agents; unscoped operators and admins see all", async (t) => {
  const nodeIds = (r: Res) => (r.body.agents as Array<{ node_id: string }>).map((a) => a.node_id).sort();
  t.same(nodeIds(await wendy("GET", "/agents")), [ids.web], "wendy sees only web (not db, nor the pending one)");
  t.same(nodeIds(await wendy("GET", "/agents?limit=1")), [ids.web], "paging fills from in-scope agents");
  t.same(nodeIds(await pat("GET", "/agents")), Object.values(ids).sort(), "an unscoped operator sees all");
  t.same(nodeIds(await adminApi("GET", "/agents")), Object.values(ids).sort(), "the admin sees all");
  t.same((await wendy("GET", "/tags")).body.tags, { role: ["web"] }, "distinct tags only of in-scope agents");
  t.same((await pat("GET", "/tags")).body.tags, { role: ["db", "web"] });
  const ops = (await wendy("GET", "/state/operations")).body.operations as Array<{ node_id: string }>;
  t.ok(ops.length > 0, "the admin's run left operations on web");
  t.notOk(
    ops.some((o) => o.node_id !== ids.web),
    "operations across agents: only in-scope ones",
  );
  const all = (await pat("GET", "/state/operations")).body.operations as Array<{ node_id: string }>;
  t.ok(
    all.some((o) => o.node_id === ids.db),
    "an unscoped operator sees those on db",
  );
  t.equal((await wendy("GET", `/state/operations/${dbOp.id}`)).status, 404, "an out-of-scope operation by id");
  const adminTargets = dbRun.operations.map((x: { node_id: string }) => x.node_id).sort();
  t.same(adminTargets, [ids.web, ids.db].sort(), "the admin's run");
  const run = await must(wendy("GET", `/assignments/everyone/runs/${dbRun.run_id}`), 200);
  const targets = run.operations.map((x: { node_id: string }) => x.node_id);
  t.same(targets, [ids.web], "another operator's run shows a scoped operator only in-scope targets");
});

t.test("every {node_id} route of the gateway answers 404 for an out-of-scope agent", async (t) => {
  // Requests that pass validation, so the answer comes from the scope check. A route missing here
  // fails the test: a new agent route cannot be forgotten.
  const req: Record<string, { body?: unknown; key?: string }> = {
    "GET /api/v1/agents/{node_id}": {},
    "POST /api/v1/agents/{node_id}": { body: { status: "approved", name: "@name" } },
    "DELETE /api/v1/agents/{node_id}": {},
    "GET /api/v1/agents/{node_id}/attributes": {},
    "PUT /api/v1/agents/{node_id}/tags": { body: { tags: { role: "@role" } } },
    "PUT /api/v1/agents/{node_id}/tags/{key}": { body: { value: "@role" }, key: "role" },
    "DELETE /api/v1/agents/{node_id}/tags/{key}": { key: "nope" },
    "GET /api/v1/agents/{node_id}/metrics": {},
    "GET /api/v1/agents/{node_id}/metrics/latest": {},
    "POST /api/v1/agents/{node_id}/apply": { body: { modules: ["marker"] } },
    "POST /api/v1/agents/{node_id}/plan": { body: { modules: ["marker"] } },
    "POST /api/v1/agents/{node_id}/drift": {},
    "GET /api/v1/agents/{node_id}/drift": {},
    "GET /api/v1/agents/{node_id}/drift/latest": {},
    "GET /api/v1/agents/{node_id}/state": {},
    "GET /api/v1/agents/{node_id}/state/operations": {},
    "GET /api/v1/agents/{node_id}/state/operations/{operation_id}": {},
    "GET /api/v1/agents/{node_id}/state/operations/{operation_id}/output": {},
    "GET /api/v1/agents/{node_id}/values": {},
    "PUT /api/v1/agents/{node_id}/values": { body: { values: { role: "@role" } } },
    "POST /api/v1/terminal/{node_id}": {},
  };
  // Admin-only agent routes: admins are never scoped, so an operator is refused before any lookup,
  // the same answer whether the agent exists or not.
  const adminOnly: Record<string, { body?: unknown }> = {
    "POST /api/v1/agents/{node_id}/upgrade": { body: { version: "0.1.0" } },
  };
  type Spec = { paths: Record<string, Record<string, unknown>> };
  const spec = (await must(adminApi("GET", "/openapi.json"), 200)) as Spec;
  const routes = Object.entries(spec.paths)
    .filter(([p]) => p.includes("{node_id}"))
    .flatMap(([p, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${p}`));
  t.ok(routes.length >= Object.keys(req).length, `${routes.length} agent routes in the table`);
  const fill = (v: unknown, role: "web" | "db"): unknown =>
    JSON.parse(
      JSON.stringify(v ?? null)
        .replaceAll("@name", `${role}-1`)
        .replaceAll("@role", role),
    ) ?? undefined;
  const call = (token: typeof wendy, route: string, role: "web" | "db", ref: string) => {
    const [method, path] = route.split(" ") as [string, string];
    const r = req[route]!;
    const url = path
      .replace("/api/v1", "")
      .replace("{node_id}", ref)
      .replace("{key}", r.key ?? "")
      .replace("{operation_id}", dbOp.id);
    return token(method, url, fill(r.body, role));
  };
  for (const route of routes) {
    const adminRoute = adminOnly[route];
    if (adminRoute) {
      for (const ref of [ids.db, ids.web, "db-1"]) {
        const [method, path] = route.split(" ") as [string, string];
        const r = await wendy(method, path.replace("/api/v1", "").replace("{node_id}", ref), adminRoute.body);
        t.equal(r.status, 403, `${route} (${ref}) → 403 for an operator, in scope or not`);
        t.equal(r.body?.code, "admin_required", `${route}: ${r.body?.code}`);
      }
      continue;
    }
    if (!req[route]) {
      t.fail(`${route} has no request in this test: add one (and make sure it is scoped)`);
      continue;
    }
    for (const ref of [ids.db, "db-1"]) {
      const r = await call(wendy, route, "db", ref);
      t.equal(r.status, 404, `${route} (${ref === ids.db ? "node id" : "name"}) → 404`);
      t.ok(["agent_not_found", "operation_not_found"].includes(r.body?.code), `${route}: ${r.body?.code}`);
    }
  }
  const after = await must(adminApi("GET", `/agents/${ids.db}`), 200);
  t.equal(after.status, "approved", "nothing changed on the db agent");
  t.same(after.tags, { role: "db" });
  // The same operator reaches its in-scope agent on the routes that have no side effect worth undoing.
  const inScope = [
    "GET /api/v1/agents/{node_id}",
    "GET /api/v1/agents/{node_id}/attributes",
    "GET /api/v1/agents/{node_id}/state",
    "PUT /api/v1/agents/{node_id}/tags/{key}",
  ];
  for (const route of inScope) {
    t.equal((await call(wendy, route, "web", ids.web)).status, 200, `${route} in scope → 200`);
  }
  const tagMissing = await call(wendy, "DELETE /api/v1/agents/{node_id}/tags/{key}", "web", ids.web);
  t.equal(tagMissing.body.code, "tag_not_found", "in scope the request gets past the agent lookup");
  const applied = await must(wendy("POST", `/agents/${ids.web}/apply?wait=20`, { modules: ["marker"] }), 200);
  t.equal(applied.status, "succeeded", "wendy applies to her web agent");
  const term = await wendy("POST", "/terminal/web-1");
  t.equal(term.status, 201, "and opens a terminal on it");
  if (term.status === 201) await wendy("DELETE", `/terminal/session/${term.body.session_id}`);
  const patPlan = await pat("POST", `/agents/${ids.db}/plan?wait=20`, { modules: ["marker"] });
  t.equal(patPlan.status, 200, "an unscoped operator reaches db");
});

t.test("an assignment run by a scoped operator fans out only to in-scope agents", async (t) => {
  const run = await must(wendy("POST", "/assignments/everyone/plan?wait=20", {}), 200);
  t.same(
    run.operations.map((x: { node_id: string }) => x.node_id),
    [ids.web],
  );
});

t.test("enforced in the services: a scoped actor on the bus is refused without the gateway", async (t) => {
  const actor: Actor = { id: webOpRow.id, name: "wendy", type: "operator", role: "operator", scope: "role=web" };
  const opts = { actor, timeoutMs: 10_000 };
  const code = async (p: Promise<unknown>) =>
    p.then(
      () => "ok",
      (e: unknown) => (e instanceof OrchError ? `${e.code}/${e.reason}` : String(e)),
    );
  const NF = "NOT_FOUND/agent_not_found";
  const agentsRpc = rpcClient(bus, "agents", AgentsService, { timeoutMs: 10_000 });
  const stateRpc = rpcClient(bus, "state", StateService, { timeoutMs: 10_000 });
  const termRpc = rpcClient(bus, "terminal", TerminalService, { timeoutMs: 10_000 });
  t.equal(await code(agentsRpc.getAgent({ id: ids.db }, opts)), NF, "agents.GetAgent");
  t.equal(await code(agentsRpc.setTag({ nodeId: ids.db, key: "role", value: "web" }, opts)), NF, "agents.SetTag");
  const listed = await agentsRpc.listAgents({ limit: 50, cursor: "", status: "" }, opts);
  t.same(
    listed.agents.map((a) => a.nodeId),
    [ids.web],
    "agents.ListAgents",
  );
  const run = stateRpc.runAgent({ nodeId: ids.db, kind: "apply", modules: ["marker"], waitSeconds: 0 }, opts);
  t.equal(await code(run), NF, "state.RunAgent");
  const op = stateRpc.getOperation({ id: dbOp.id, nodeId: "" }, opts);
  t.equal(await code(op), "NOT_FOUND/operation_not_found", "state.GetOperation");
  const open = termRpc.openSession({ nodeId: ids.db, nodeName: "web-1", cols: 80, rows: 24, shell: "" }, opts);
  t.equal(await code(open), NF, "terminal.OpenSession, whatever name the caller claims");
  const garbled = { actor: { ...actor, scope: "role=(" }, timeoutMs: 10_000 };
  t.equal(await code(agentsRpc.getAgent({ id: ids.db }, garbled)), NF, "an unparsable scope reaches nothing");
  const unscoped = { actor: { ...actor, scope: "" }, timeoutMs: 10_000 };
  t.equal(await code(agentsRpc.getAgent({ id: ids.db }, unscoped)), "ok", "control: unscoped, the same call succeeds");
});
