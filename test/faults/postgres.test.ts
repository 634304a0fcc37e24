import t from "tap";
import { eventually, startNats, startPrivatePostgres } from "@orch/kit/testing";
import { printFigures } from "./lib/figures.js";
import { checkAfterFault } from "./lib/invariants.js";
import { startMixedLoad } from "./lib/load.js";
import { PG_RETRY_BUDGET_MS, postgresOutage, SHORT_ACK_WAIT_MS } from "./lib/postgres-faults.js";
import { startFaultStack } from "./lib/stack.js";

// Stop and restart Postgres under the steady mixed load: once quickly (a fast stop, ~2 s down) and
// once for longer than the services' retry budget (an immediate stop, i.e. a crash with WAL
// recovery). The database is a private instance on its own port, so the shared server is untouched.
// Needs `npm run build`.
const QUICK_MS = 2_000;
const LONG_MS = PG_RETRY_BUDGET_MS + 5_000;

const nats = await startNats();
const pgi = await startPrivatePostgres();
const db = await pgi.createDatabase("orch_fault_pg");
const stack = await startFaultStack({
  name: "postgres",
  nats,
  db,
  agents: 3,
  env: { ORCH_AUDIT_ACK_WAIT_MS: String(SHORT_ACK_WAIT_MS) },
});
t.teardown(async () => {
  await stack.stop();
  await pgi.destroy();
  await nats.stop();
});

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

// The load reads every agent's latest metrics: a 404 no_metrics before an agent's first report
// would be blamed on the fault.
await eventually(async () => {
  for (const a of stack.agents) {
    const r = await stack.system.api("GET", `/api/v1/agents/${a.nodeId}/metrics/latest`, { token: stack.token });
    if (r.status !== 200) return false;
  }
  return true;
}, 30_000);

// An apply whose agents answer while Postgres is down: the state service must store each
// operation's end once the database is back, not leave it running until its deadline.
const admin = (method: string, path: string, body?: unknown) =>
  stack.system.api(method, `/api/v1${path}`, { token: stack.token, body });
for (const [path, body] of [
  [
    "/modules",
    { name: "pg-slow", content: "name: pg-slow\nresources:\n  - { id: slow, type: exec, command: 'sleep 1' }\n" },
  ],
  ["/assignments", { name: "pg-slow", selector: "fault=on", modules: ["pg-slow"] }],
] as const) {
  const r = await admin("POST", path, body);
  if (r.status !== 201) throw new Error(`POST ${path}: ${r.status} ${r.text}`);
}

const outages = [
  { scenario: "postgres-restart-quick", mode: "fast", downMs: QUICK_MS },
  { scenario: "postgres-outage-long", mode: "immediate", downMs: LONG_MS },
] as const;

t.ok(LONG_MS > PG_RETRY_BUDGET_MS && LONG_MS > SHORT_ACK_WAIT_MS, "the long outage outlasts the retry budget");

for (const o of outages) {
  await t.test(o.scenario, async (t) => {
    const load = startMixedLoad(stack);
    await pause(3000);
    // A run whose agents report their results while Postgres is down: it must still end, once.
    const spanning = await stack.system.api("POST", "/api/v1/runs", {
      token: stack.token,
      body: { selector: "fault=on", command: ["sleep", "1"], timeout_s: 120 },
    });
    t.equal(spanning.status, 202, `a run spanning the outage started (${spanning.body?.code ?? spanning.status})`);
    const apply = await admin("POST", "/assignments/pg-slow/apply", {});
    t.equal(apply.status, 202, `an apply spanning the outage started (${apply.body?.code ?? apply.status})`);
    // Every operation sent to its agent (none pending), so the agents answer during the outage.
    await eventually(async () => {
      const r = await admin("GET", `/assignments/pg-slow/runs/${apply.body?.run_id}`);
      const ops = (r.body?.operations ?? []) as Array<{ status: string }>;
      return ops.length === stack.agents.length && ops.every((op) => op.status !== "pending");
    }, 10_000);
    const timing = await postgresOutage(pgi, load, o);
    t.ok(timing.downMs >= o.downMs, `Postgres was down ${timing.downMs} ms (start took ${timing.startMs} ms)`);
    // Writes succeed again, then long enough for a run or two to finish.
    await load.recovered();
    await pause(5000);
    const report = await load.stop();
    const runId = spanning.body?.id as string;
    report.operations.push(runId);
    report.acked.push({
      kind: "run.started",
      checkPath: `/api/v1/runs/${runId}`,
      auditType: "run.started",
      resourceId: runId,
    });

    const faultStart = load.marks[0]?.at ?? 0;
    const during = report.requests.filter((r) => r.at >= faultStart && r.at < faultStart + timing.downMs - 500);
    t.ok(
      during.some((r) => r.status === 503 && r.code === "database_unavailable" && r.retryAfter),
      "clients were told the database is unavailable, with Retry-After",
    );
    const exited = [...stack.system.procs].filter(([, p]) => p.child.exitCode !== null || p.child.signalCode !== null);
    t.same(
      exited.map(([n]) => n),
      [],
      "no service exited",
    );

    const figures = await checkAfterFault(t, stack, report, { scenario: o.scenario, faults: 1, settleMs: 45_000 });
    printFigures(figures);
    // Its agents answered while Postgres was down: their results are kept, not swept as lost.
    const run = await stack.system.api("GET", `/api/v1/runs/${runId}?output=false`, { token: stack.token });
    t.match(
      run.body,
      { status: "completed", counts: { succeeded: stack.agents.length } },
      `the spanning run completed on every agent: ${run.body?.status} ${JSON.stringify(run.body?.counts)}`,
    );
    // Its operations ended while Postgres was down: each is stored as it ended, with one audit event.
    const applyRun = `/assignments/pg-slow/runs/${apply.body?.run_id}`;
    const ended = await eventually(async () => {
      const r = await admin("GET", applyRun);
      return r.status === 200 && r.body.status !== "running" ? r.body : undefined;
    }, 60_000).catch(() => undefined);
    const ops = (await admin("GET", `${applyRun}/operations?limit=100`)).body?.operations as
      | Array<{ id: string; status: string }>
      | undefined;
    t.same(
      (ops ?? []).map((op) => op.status),
      stack.agents.map(() => "succeeded"),
      `the spanning apply ended (${ended?.status}) and every operation succeeded`,
    );
    const events = (await admin("GET", "/audit?event_type=state.apply.succeeded&limit=500")).body?.events as
      | Array<{ metadata?: { operation_id?: string } }>
      | undefined;
    for (const op of ops ?? [])
      t.equal(
        (events ?? []).filter((e) => e.metadata?.operation_id === op.id).length,
        1,
        `operation ${op.id} has exactly one state.apply.succeeded event`,
      );
    t.comment(`${o.scenario}: down ${timing.downMs} ms, recovery ${figures.recoverySeconds} s after restart`);
  });
}
