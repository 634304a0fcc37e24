import t, { type Test } from "tap";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import pg from "pg";
import { AgentControlService } from "@orch/contracts";
import { rpcClient } from "@orch/kit";
import { createTestDatabase, eventually, freePort, startNats, startSystem, waitForPort } from "@orch/kit/testing";
import { agentPool } from "../../services/agents/test/harness.js";
import { login, request, retryingClient, type CallRecord } from "./lib/gateway-client.js";
import { records, started } from "./lib/process-logs.js";
import { startTcpLoadBalancer, type TcpLoadBalancer } from "./lib/tcp-lb.js";

// The multi-replica scale test (docs/scale-test.md). Two processes each of gateway, agents and state on
// one NATS and one Postgres (plus auth and whichever of secrets, audit, notify, terminal are
// built), four real orch-agent processes reaching the agents replicas through a TCP load balancer
// (the stand-in for the agent-link LoadBalancer Service). It shows: the workflow passes through
// either gateway; SIGKILL of one replica of each fails no operator call that is retried once;
// scheduled drift checks run once per period although both state replicas schedule them.
// Needs `npm run build` (dist/main.js of the services and of agent/). See docs/scale-test.md.

const DRIFT_INTERVAL_S = 3;
const PERIODS = 5;
// Long enough that the slow apply below is still running on state-1 when it is killed, even on a
// busy machine where starting state-2 again takes tens of seconds (the kill comes after that).
const OPERATION_TIMEOUT_S = 45;
const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const optional = ["secrets", "audit", "notify", "terminal"].filter((s) =>
  existsSync(`${ROOT}services/${s}/dist/main.js`),
);
const has = (s: string) => optional.includes(s);

const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const work = mkdtempSync(join(tmpdir(), "orch-e2e-scale-"));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
const sql = new pg.Client({ connectionString: db.url });
await sql.connect();
const nc = await nats.connect("scale-test");
const agents = agentPool();
let lb: TcpLoadBalancer | undefined;
t.teardown(async () => {
  await agents.stop();
  await lb?.close();
  await sql.end();
});

const [link1, link2, gw2Port] = [await freePort(), await freePort(), await freePort()];
const sys = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", ...optional, "agents", "state", "gateway"],
  env: {
    ORCH_AGENTS_LINK_HOST: "127.0.0.1",
    ORCH_AGENTS_LINK_PORT: String(link1),
    ORCH_AGENTS_REPLICA_HEARTBEAT_SECONDS: "1",
    ORCH_AGENTS_REPLICA_TIMEOUT_SECONDS: "4",
    ORCH_STATE_DRIFT_INTERVAL_SECONDS: String(DRIFT_INTERVAL_S),
    ORCH_STATE_OPERATION_TIMEOUT_SECONDS: String(OPERATION_TIMEOUT_S),
    ORCH_STATE_SWEEP_INTERVAL_SECONDS: "1",
    ORCH_SECRETS_KEYS: `k1:${Buffer.alloc(32, 9).toString("base64")}`,
    ORCH_TERMINAL_TRANSCRIPT_DIR: join(work, "transcripts"),
  },
});
const proc = (name: string) => sys.procs.get(name)!;
const gw1 = sys.url;
const gw2 = `http://127.0.0.1:${gw2Port}`;

// The second replicas. Only the agents one needs its own port; the others share the bus.
await sys.start("gateway", { ORCH_HTTP_PORT: String(gw2Port) }, "gateway-2");
await sys.start("agents", { ORCH_AGENTS_LINK_PORT: String(link2) }, "agents-2");
await sys.start("state", {}, "state-2");
await Promise.all([
  started(proc("gateway-2"), "gateway"),
  started(proc("agents-2"), "agents"),
  started(proc("state-2"), "state"),
]);
await waitForPort(gw2Port, 10_000);

const replicaId = async (name: string) =>
  (await eventually(() => records(proc(name)).find((r) => r.msg === "agent link listening"), 10_000)).replica as string;
const rep1 = await replicaId("agents");
const rep2 = await replicaId("agents-2");
lb = await startTcpLoadBalancer({
  backends: [
    { host: "127.0.0.1", port: link1 },
    { host: "127.0.0.1", port: link2 },
  ],
});

const admin = await login(gw1, sys.admin);
const api = (url: string, method: string, path: string, body?: unknown, token = admin) =>
  request(url, method, `/api/v1${path}`, { token, body, timeoutMs: 60_000 });
const must = async (p: ReturnType<typeof api>, status: number) => {
  const r = await p;
  if (r.status !== status) throw new Error(`${r.url}: expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
};
const holders = async () =>
  new Map(
    (
      await sql.query<{ node_id: string; replica: string }>(
        "SELECT node_id, replica FROM agents.agents WHERE connected",
      )
    ).rows.map((r) => [r.node_id, r.replica]),
  );
const ping = (id: string) =>
  rpcClient(nc, "", AgentControlService, { timeoutMs: 5000, subjectBase: `orch.agent.${id}` }).ping({
    payload: `scale ${id}`,
  });

const procs = Array.from({ length: 4 }, () =>
  agents.spawn(["--server", `127.0.0.1:${lb!.port}`, "--metrics-interval", "2"]),
);
const ids = await Promise.all(procs.map((p) => p.nodeId()));
await eventually(async () => (await holders()).size === ids.length, 30_000);
for (const [i, id] of ids.entries())
  await must(api(gw1, "POST", `/agents/${id}`, { status: "approved", name: `scale-${i + 1}` }), 200);
const initial = await holders();
const on = (rep: string) => ids.filter((id) => initial.get(id) === rep);
const [a1, b1] = [on(rep1), on(rep2)];

t.test("four real agents spread over both agents replicas through the load balancer", async (t) => {
  t.ok(a1.length >= 1 && b1.length >= 1, `agents-1 holds ${a1.length}, agents-2 holds ${b1.length}`);
  t.equal(a1.length + b1.length, 4, "every agent is held by one of the two replicas");
  t.ok(
    Object.values(lb!.relayed()).every((n) => n >= 1),
    `the load balancer relayed links to both replicas (${JSON.stringify(lb!.relayed())})`,
  );
  for (const id of ids) t.match(await ping(id), { nodeId: id }, `Ping reaches ${id} whichever replica holds it`);
});

/** The e2e workflow through one gateway: login, operators, agents, module upload, apply, operation, audit. */
async function workflow(t: Test, url: string, label: string, nodeId: string) {
  const token = await login(url, sys.admin);
  const call = (method: string, path: string, body?: unknown) => api(url, method, path, body, token);
  const ops = await must(call("GET", "/operators"), 200);
  t.ok(
    ops.operators.some((o: any) => o.public_key === sys.admin.publicKeyHex && o.role === "admin"),
    "the bootstrap admin is listed",
  );
  const list = await must(call("GET", "/agents?limit=100"), 200);
  t.same(
    list.agents.map((a: any) => `${a.status}/${a.connected}`).sort(),
    Array(4).fill("approved/true"),
    "four approved, connected agents",
  );

  const file = join(work, `${label}.txt`);
  const module = `scale-${label}`;
  const content = [
    `name: ${module}`,
    "description: written by the scale test",
    "resources:",
    "  - id: marker",
    "    type: file",
    `    path: ${file}`,
    `    content: "through ${label}\\n"`,
    '    mode: "0644"',
    "",
  ].join("\n");
  t.equal((await must(call("POST", "/modules", { name: module, content }), 201)).name, module, "module uploaded");
  const op = await must(call("POST", `/agents/${nodeId}/apply?wait=30`, { modules: [module] }), 200);
  t.equal(op.status, "succeeded", `apply ${op.id} succeeded`);
  t.equal(readFileSync(file, "utf8"), `through ${label}\n`, "the agent wrote the file");
  const read = await must(call("GET", `/state/operations/${op.id}`), 200);
  t.match(read, { id: op.id, node_id: nodeId, kind: "apply", status: "succeeded", summary: { changed: 1, failed: 0 } });
  t.same(
    read.results.map((r: any) => [r.id, r.status]),
    [["marker", "changed"]],
  );
  if (has("audit")) {
    const ev = await eventually(async () => {
      const r = await call("GET", "/audit?event_type=state.apply.succeeded&limit=100");
      return r.body?.events?.find((e: any) => e.metadata?.operation_id === op.id);
    }, 20_000);
    t.equal(ev.target.id, nodeId, "the apply is in the audit log");
  }
}

t.test("the workflow passes through gateway-1 (agent on agents-1)", (t) => workflow(t, gw1, "gateway-1", a1[0]!));
t.test("the workflow passes through gateway-2 (agent on agents-2)", (t) => workflow(t, gw2, "gateway-2", b1[0]!));

t.test("scheduled drift checks run once per period although both state replicas schedule them", async (t) => {
  const watched = [a1[0]!, b1[0]!];
  const from = Date.now();
  // Which replica ran each pass (the kit's jobs table), shown for the record: either may win a period.
  const runners = new Set<string>();
  while (Date.now() - from < PERIODS * DRIFT_INTERVAL_S * 1000) {
    const r = await sql.query<{ last_replica: string }>(
      "SELECT last_replica FROM state.jobs WHERE name = 'state.drift'",
    );
    if (r.rows[0]) runners.add(r.rows[0].last_replica);
    await new Promise((r) => setTimeout(r, 500));
  }
  const to = Date.now();
  t.comment(`state.drift was run by ${runners.size} replica(s): ${[...runners].join(", ")}`);
  t.ok(
    ["state", "state-2"].every((n) => proc(n).child.exitCode === null),
    "both state replicas ran throughout",
  );
  const rows = (
    await sql.query<{ node_id: string; created_at: number }>(
      "SELECT node_id, created_at FROM state.operations WHERE kind = 'drift' AND actor_id = 'system' AND created_at >= $1 AND created_at < $2 ORDER BY created_at",
      [from, to],
    )
  ).rows;
  for (const id of watched) {
    const times = rows.filter((r) => r.node_id === id).map((r) => Number(r.created_at));
    const gaps = times.slice(1).map((x, i) => x - times[i]!);
    t.comment(
      `${id}: ${times.length} scheduled checks in ${PERIODS} periods of ${DRIFT_INTERVAL_S} s; gaps ms ${JSON.stringify(gaps)}`,
    );
    // Two schedulers must not double the runs: never more than one per period. Fewer is the
    // machine's speed, not the behaviour; two are needed for a gap to judge.
    t.ok(
      times.length >= 2 && times.length <= PERIODS + 1,
      `${times.length} runs in ${PERIODS} periods (allowed 2..${PERIODS + 1})`,
    );
    t.ok(
      gaps.every((g) => g >= 0.8 * DRIFT_INTERVAL_S * 1000),
      `no two runs closer than 0.8 × the interval (shortest ${Math.min(...gaps)} ms)`,
    );
  }
});

t.test("SIGKILL of one gateway, agents and state replica mid-run fails no operator call retried once", async (t) => {
  // Not the gateway-2 workflow's agent: this one is kept busy by the slow apply.
  const survivor = b1.at(-1)!;
  const token = await login(gw1, sys.admin);
  const client = retryingClient([gw1, gw2], token);
  const ok = (r: { status: number }) => r.status === 200;
  let running = true;
  let kills = 0;
  const after: CallRecord[] = [];
  const worker = async (w: number) => {
    for (let i = 0; running; i++) {
      const id = ids[(w + i) % ids.length]!;
      const c = (label: string, method: string, path: string, body?: unknown) => () =>
        client.call(label, method, `/api/v1${path}`, ok, body);
      const calls = [
        c("status", "GET", "/status"),
        c("operators", "GET", "/operators"),
        c("agents", "GET", "/agents?limit=100"),
        c("agent", "GET", `/agents/${id}`),
      ];
      calls.push(
        c("tag", "PUT", `/agents/${id}/tags/loop`, { value: `w${w}` }),
        c("modules", "GET", "/modules"),
        c("operations", "GET", "/state/operations?limit=5"),
      );
      if (has("audit")) calls.push(c("audit", "GET", "/audit?limit=5"));
      if (has("secrets")) calls.push(c("secrets", "GET", "/secrets"));
      if (has("notify")) calls.push(c("notifications", "GET", "/notifications"));
      for (const call of calls) {
        if (!running) break;
        const killedBefore = kills > 0;
        const rec = await call();
        if (killedBefore) after.push(rec);
        // A steady trickle is enough to be mid-call at every kill; the machine is shared.
        await new Promise((r) => setTimeout(r, 20));
      }
    }
  };
  const loop = Promise.all([0, 1, 2].map(worker));

  try {
    // Roll state-2 (graceful stop, start again) so that the slow apply below certainly runs on
    // state-1, the replica about to be killed.
    await sys.kill("state-2", "SIGTERM");
    const slowModule = "scale-slow";
    await must(
      api(gw1, "POST", "/modules", {
        name: slowModule,
        content: `name: ${slowModule}\nresources:\n  - { id: wait, type: exec, command: 'sleep ${OPERATION_TIMEOUT_S * 2}' }\n`,
      }),
      201,
    );
    const slow = await must(api(gw1, "POST", `/agents/${survivor}/apply`, { modules: [slowModule] }), 202);
    await eventually(
      async () => (await api(gw1, "GET", `/state/operations/${slow.id}`)).body?.status === "running",
      15_000,
    );
    await sys.start("state", {}, "state-2");
    await started(proc("state-2"), "state");

    t.equal(
      (await api(gw1, "GET", `/state/operations/${slow.id}`)).body?.status,
      "running",
      "the slow apply still runs on state-1 when the kills start",
    );
    const killedAt = Date.now();
    for (const name of ["gateway", "agents", "state"]) {
      await sys.kill(name, "SIGKILL");
      kills++;
      await new Promise((r) => setTimeout(r, 500));
    }

    // The agents of agents-1 come back through the load balancer, all on agents-2, and answer.
    const moved = await eventually(async () => {
      const h = await holders();
      return ids.every((id) => h.get(id) === rep2) ? h : undefined;
    }, 30_000);
    t.comment(`every agent held by agents-2 ${Date.now() - killedAt} ms after the kills`);
    t.equal(moved.size, 4, "every agent is held by agents-2 after the kills");
    for (const id of a1)
      t.match(
        await eventually(() => ping(id).catch(() => undefined), 15_000),
        { nodeId: id },
        `Ping reaches ${id}, which moved from agents-1`,
      );

    // The apply state-1 was running ends (the sweep of the surviving replica), never hangs.
    const ended = await eventually(
      async () => {
        const r = await api(gw2, "GET", `/state/operations/${slow.id}`);
        return r.status === 200 && r.body.status !== "running" && r.body.status !== "pending" ? r.body : undefined;
      },
      (OPERATION_TIMEOUT_S + 20) * 1000,
    );
    t.match(
      ended,
      { status: "timed_out", error_code: "operation_timed_out" },
      `the apply orphaned by state-1 ended timed_out (${ended.error})`,
    );
  } finally {
    running = false;
    await loop;
  }
  const failed = client.log.filter((r) => !r.ok);
  const retried = client.log.filter((r) => r.requests === 2);
  const refused = client.log.filter((r) => r.attempts.some((a) => a.refused));
  t.comment(
    `${client.log.length} calls (${after.length} after the first kill): ${retried.length} retried once, ${refused.length} skipped the refusing gateway-1, ${failed.length} failed`,
  );
  t.same(failed, [], "no call failed after one retry");
  // How many calls fit in the kills is the machine's figure; that every one of them was answered is the behaviour.
  t.ok(after.length > 0, `calls were made during the kills (${after.length})`);
  t.same(
    after.filter((r) => !r.ok),
    [],
    "every call made during the kills got an answer",
  );
  t.ok(
    after.some((r) => r.ok && r.attempts[0]!.refused && r.attempts[0]!.url === gw1 && r.attempts.at(-1)!.url === gw2),
    "calls refused by the dead gateway-1 were answered by gateway-2",
  );
  t.ok(
    lb!.relayed()[`127.0.0.1:${link2}`]! >= 4,
    `the moved agents reconnected through the load balancer (${JSON.stringify(lb!.relayed())})`,
  );
});

t.test("after the kills the workflow passes through gateway-2, on an agent that moved replicas", (t) =>
  workflow(t, gw2, "after-kill", a1[0]!),
);

t.test("the surviving replicas are still up", async (t) => {
  for (const name of ["auth", ...optional, "gateway-2", "agents-2", "state-2"])
    t.equal(proc(name).child.exitCode, null, `${name} running`);
  t.notMatch(sys.output(), /PRIVATE KEY/);
});
