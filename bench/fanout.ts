/**
 * npm run bench -- fanout [--agents 500] [--resources 20] [--exec-ms 20] [--concurrency 200] [--template-loop]
 *
 * Assignment fan-out at fleet scale: one agents-service process and one state-service process
 * (their dist/main.js, a fresh database, a private nats-server) and a load-generator child
 * (bench/lib/sim-state-agent.ts) holding N real gRPC agent links that answer
 * AgentStateService.Execute after `--exec-ms` of simulated work. A module of `--resources`
 * resources is assigned to all N (selector `env=bench`); the bench reports, for an apply, a plan
 * and a second (no-change) apply, the time from the RunAssignment call until every operation
 * finished, and operations per second, and for each run where its work went: CPU-seconds of each
 * process (state, agents, sim, postgres backends of the bench database, nats-server), statements
 * each service sent and NATS messages, per operation. Goals: 500 agents applied in < 1.5 s, and at
 * least 1,000 operations/s at larger sizes (10,000 agents in < 10 s). Raw figures go to bench/results/.
 * ORCH_BENCH_NODE_OPTIONS are node flags for the services (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
 * `--template-loop` makes the module version 2 (docs/modules.md, Templates (version 2)): its first
 * file renders a loop over a 50-item list from the `defaults` value set, and the bench prints the
 * render CPU per agent (lib/render-cpu.ts).
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdirSync, writeFileSync } from "node:fs";
import { cpus, loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { StateService, type AssignmentRun } from "@orch/contracts";
import { rpcClient, type Actor, type NatsConnection } from "@orch/kit";
import {
  createTestDatabase,
  freePort,
  startNats,
  waitForPort,
  type DbHandle,
  type NatsHandle,
} from "@orch/kit/testing";
import { approveTagged } from "./lib/approve-tagged.js";
import { children, stopChildren } from "./lib/children.js";
import { intOptions } from "./lib/int-options.js";
import { countingEnv, natsMessages, natsMonitorConfig, statements } from "./lib/fanout-costs.js";
import { printRenderCpu, UPSTREAMS } from "./lib/render-cpu.js";
import { cpuSeconds, natsServerPid } from "./lib/proc-cpu.js";
import { forkLinkFleet, linksUp, type LinkFleet } from "./lib/link-fleet.js";
import type { StateCounters } from "./lib/sim-state-agent.js";

const ROOT = fileURLToPath(new URL("../", import.meta.url));
const SIM = fileURLToPath(new URL("./lib/sim-state-agent.ts", import.meta.url));
const ACTOR: Actor = { id: "bench", name: "bench", type: "operator", role: "admin" };

const {
  agents: N,
  resources: R,
  "exec-ms": execMs,
  concurrency,
  "template-loop": templateLoop,
} = intOptions(
  "fanout",
  {
    agents: { default: 500, min: 1, max: 20_000 },
    resources: { default: 20, min: 1, max: 500 },
    "exec-ms": { default: 20, min: 0, max: 60_000 },
    concurrency: { default: 200, min: 1, max: 10_000 },
  },
  ["template-loop"],
);

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A service from its dist/main.js; resolves once it answers its ping subject. */
async function startService(
  name: string,
  nats: NatsHandle,
  db: DbHandle,
  nc: NatsConnection,
  env: Record<string, string>,
) {
  const output: string[] = [];
  const countFile = join(tmpdir(), `orch-bench-${name}-${process.pid}.count`);
  // On node's command line, not in NODE_OPTIONS, which refuses flags such as --cpu-prof.
  const flags = (process.env.ORCH_BENCH_NODE_OPTIONS ?? "").split(/\s+/).filter(Boolean);
  const child = spawn(process.execPath, [...flags, `${ROOT}services/${name}/dist/main.js`], {
    env: {
      ...process.env,
      NATS_URL: nats.url,
      DATABASE_URL: db.url,
      ORCH_HEALTH_PORT: "0",
      ORCH_HEALTH_HOST: "127.0.0.1",
      ORCH_LOG_LEVEL: "warn",
      ...countingEnv(countFile),
      ...env,
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  const keep = (d: Buffer) => {
    output.push(d.toString());
    if (output.length > 200) output.shift();
  };
  child.stdout!.on("data", keep);
  child.stderr!.on("data", keep);
  for (let i = 0; ; i++) {
    try {
      await nc.request(`orch.${name}._ping`, new Uint8Array(), { timeout: 500 });
      return { child, output, countFile };
    } catch {
      if (child.exitCode !== null || i > 120)
        throw new Error(`${name} did not start:\n${output.join("").slice(-2000)}`);
      await sleep(250);
    }
  }
}

/** With --template-loop, the first file: an upstream list from values, as a web server's config is. */
const LOOP = '"{% for u in values.upstreams %}server {{ u.host }}:{{ u.port }} max_fails=3;\\n{% endfor %}"';

function moduleYaml(): string {
  const lines = ["name: bench-web", "description: a 20-resource module for the fan-out bench", "resources:"];
  if (templateLoop) lines.unshift("version: 2");
  for (let i = 0; i < R; i++) {
    if (i % 5 === 0) lines.push(`  - { id: dir-${i}, type: directory, path: /srv/bench/d${i} }`);
    else if (templateLoop && i === 1)
      lines.push(
        `  - { id: file-${i}, type: file, path: /srv/bench/d0/upstreams.conf, content: ${LOOP}, requires: [dir-0] }`,
      );
    else if (i % 5 === 4)
      lines.push(
        `  - { id: run-${i}, type: exec, command: 'true', creates: /srv/bench/done-${i}, requires: [file-${i - 1}] }`,
      );
    else
      lines.push(
        `  - { id: file-${i}, type: file, path: /srv/bench/d${i - (i % 5)}/f${i}.conf, content: "host={{ attributes.hostname }} i=${i}\\n", requires: [dir-${i - (i % 5)}] }`,
      );
  }
  return `${lines.join("\n")}\n`;
}

type Service = Awaited<ReturnType<typeof startService>>;

/** The stack whose costs a run is charged with. */
interface Stack {
  nc: NatsConnection;
  db: DbHandle;
  state: Service;
  agents: Service;
  sim: ChildProcess;
  natsPid: number | undefined;
  natsMonitor: number;
}

interface Sample {
  cpu: Record<string, number>;
  /** CPU-s of each Postgres backend serving the bench database, by pid. */
  backends: Map<number, number>;
  statements: { state: number; agents: number };
  nats: { in: number; out: number };
}

/** Postgres backends serving the bench database (their CPU is the database's share of the work). */
async function postgresPids(db: DbHandle): Promise<number[]> {
  const pg = (await import("pg")).default;
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  try {
    const r = await c.query<{ pid: number }>(
      "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()",
    );
    return r.rows.map((x) => x.pid);
  } finally {
    await c.end();
  }
}

async function sample(s: Stack): Promise<Sample> {
  const backends = new Map((await postgresPids(s.db)).map((pid) => [pid, cpuSeconds(pid)]));
  return {
    cpu: {
      state: cpuSeconds(s.state.child.pid!),
      agents: cpuSeconds(s.agents.child.pid!),
      sim: cpuSeconds(s.sim.pid!),
      "nats-server": s.natsPid ? cpuSeconds(s.natsPid) : 0,
    },
    backends,
    statements: {
      state: await statements(s.state.child.pid!, s.state.countFile),
      agents: await statements(s.agents.child.pid!, s.agents.countFile),
    },
    nats: await natsMessages(s.natsMonitor),
  };
}

/** What one run cost, per process and per operation. */
interface Costs {
  cpuSeconds: Record<string, number>;
  statements: { state: number; agents: number };
  natsMessages: { in: number; out: number };
}

function costs(a: Sample, b: Sample): Costs {
  // Per backend: one opened during the run counts from 0; one that closed during it is missed (pools
  // close idle connections, so an undercount is possible, never an overcount).
  let postgres = 0;
  for (const [pid, cpu] of b.backends) postgres += cpu - (a.backends.get(pid) ?? 0);
  return {
    cpuSeconds: {
      ...Object.fromEntries(Object.keys(b.cpu).map((k) => [k, Math.max(0, b.cpu[k]! - (a.cpu[k] ?? 0))])),
      postgres,
    },
    statements: { state: b.statements.state - a.statements.state, agents: b.statements.agents - a.statements.agents },
    natsMessages: { in: b.nats.in - a.nats.in, out: b.nats.out - a.nats.out },
  };
}

interface Row {
  kind: string;
  seconds: number;
  serverSeconds: number;
  /** From the run's record to its first operation start: what reading the fleet and recording the run cost. */
  firstStartSeconds: number;
  opsPerSecond: number;
  succeeded: number;
  other: string;
  changed: number;
  operations: number;
  costs: Costs;
  load1: number;
}

async function measure(stack: Stack, kind: "apply" | "plan", label: string): Promise<Row> {
  const { nc, db } = stack;
  const state = rpcClient(nc, "state", StateService, { timeoutMs: 310_000 });
  const before = await sample(stack);
  const t0 = performance.now();
  const run: AssignmentRun = await state.runAssignment(
    { name: "bench", kind, batch: "", waitSeconds: 300 },
    { actor: ACTOR },
  );
  const seconds = (performance.now() - t0) / 1000;
  const spent = costs(before, await sample(stack));
  if (run.status === "running") throw new Error(`${label}: still running after 300 s`);
  const byStatus = new Map<string, number>();
  for (const t of run.targets) byStatus.set(t.status, (byStatus.get(t.status) ?? 0) + 1);
  const pg = (await import("pg")).default;
  const c = new pg.Client({ connectionString: db.url });
  await c.connect();
  const span = (
    await c.query(
      "SELECT max(finished_at) - $2::bigint AS ms, min(started_at) - $2::bigint AS first_ms, sum((summary->>'changed')::int) AS changed FROM state.operations WHERE run_id = $1",
      [run.id, run.createdAt],
    )
  ).rows[0];
  await c.end();
  const succeeded = byStatus.get("succeeded") ?? 0;
  byStatus.delete("succeeded");
  return {
    kind: label,
    seconds,
    serverSeconds: Number(span.ms) / 1000,
    firstStartSeconds: Number(span.first_ms) / 1000,
    opsPerSecond: run.targets.length / seconds,
    succeeded,
    other: [...byStatus].map(([s, n]) => `${n} ${s}`).join(", ") || "-",
    changed: Number(span.changed ?? 0),
    operations: run.targets.length,
    costs: spent,
    load1: loadavg()[0]!,
  };
}

function printCosts(rows: Row[]) {
  const procs = Object.keys(rows[0]!.costs.cpuSeconds);
  console.log(
    `\nwhere the work went (CPU-s of each process during the run, then CPU-ms / statements / NATS messages per operation)\n`,
  );
  console.log(
    [
      "run".padEnd(24),
      ...procs.map((p) => `${p} CPU-s`.padStart(19)),
      "CPU-ms/op".padStart(11),
      "SQL/op state".padStart(13),
      "SQL/op agents".padStart(14),
      "NATS in/op".padStart(11),
      "NATS out/op".padStart(12),
      "load1".padStart(7),
    ].join(""),
  );
  for (const r of rows) {
    const c = r.costs;
    const total = Object.values(c.cpuSeconds).reduce((a, b) => a + b, 0);
    const per = (n: number) => (n / Math.max(1, r.operations)).toFixed(2);
    console.log(
      [
        r.kind.padEnd(24),
        ...procs.map((p) => c.cpuSeconds[p]!.toFixed(2).padStart(19)),
        per(total * 1000).padStart(11),
        per(c.statements.state).padStart(13),
        per(c.statements.agents).padStart(14),
        per(c.natsMessages.in).padStart(11),
        per(c.natsMessages.out).padStart(12),
        r.load1.toFixed(1).padStart(7),
      ].join(""),
    );
  }
  // The same CPU per operation and process: what a change to one service is judged by.
  console.log(`\nCPU-ms per operation by process\n`);
  console.log(["run".padEnd(24), ...procs.map((p) => p.padStart(12))].join(""));
  for (const r of rows) {
    const per = (s: number) => ((s * 1000) / Math.max(1, r.operations)).toFixed(3);
    console.log([r.kind.padEnd(24), ...procs.map((p) => per(r.costs.cpuSeconds[p]!).padStart(12))].join(""));
  }
}

/** SIGTERM, then waits for the exit (a --cpu-prof profile is written on the way out). */
async function stopService(child: ChildProcess | undefined) {
  if (!child || child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once("exit", r));
  child.kill("SIGTERM");
  await Promise.race([exited, sleep(10_000)]);
}

async function main() {
  console.error(
    `bench fanout (${cpus().length} cores, load average ${loadavg()[0]!.toFixed(1)} at the start): ${N} simulated agents, ${R}-resource module${templateLoop ? " (version 2, a 50-item template loop)" : ""}, ${execMs} ms per Execute, state.fanout_concurrency=${concurrency}`,
  );
  const natsMonitor = await freePort();
  const nats = await startNats({ configFile: natsMonitorConfig(natsMonitor) });
  const db = await createTestDatabase("orch_bench");
  const nc = await nats.connect("bench");
  let fleet: LinkFleet<StateCounters> | undefined;
  const services: Service[] = [];
  try {
    const linkPort = await freePort();
    // Plaintext on purpose: the simulated links (bench/lib/sim-state-agent.ts) speak it, as in earlier runs.
    const agents = await startService("agents", nats, db, nc, {
      ORCH_AGENTS_INSECURE: "true",
      ORCH_AGENTS_LINK_HOST: "127.0.0.1",
      ORCH_AGENTS_LINK_PORT: String(linkPort),
    });
    services.push(agents);
    // Every apply asks the auth service whether an approval policy holds it (docs/approvals.md).
    services.push(await startService("auth", nats, db, nc, {}));
    await waitForPort(linkPort, 30_000);
    const stateSvc = await startService("state", nats, db, nc, {
      ORCH_STATE_FANOUT_CONCURRENCY: String(concurrency),
      ORCH_STATE_DRIFT_INTERVAL_SECONDS: "0",
    });
    services.push(stateSvc);

    fleet = forkLinkFleet<StateCounters>(SIM, linkPort, N, execMs);
    const nodeIds = await linksUp(fleet, N);
    await approveTagged(nc, nodeIds, ACTOR, (i) => ({ env: "bench", role: i % 2 ? "web" : "db" }));
    console.error(`  ${N} agents approved and tagged`);

    const state = rpcClient(nc, "state", StateService, { timeoutMs: 30_000 });
    if (templateLoop)
      await state.putValueSet(
        { name: "defaults", selector: "", priority: 0, description: "", values: { upstreams: UPSTREAMS }, content: "" },
        { actor: ACTOR },
      );
    await state.uploadModule({ name: "bench-web", content: moduleYaml() }, { actor: ACTOR });
    await state.createAssignment(
      { name: "bench", selector: "env=bench,role in (web,db)", modules: ["bench-web"] },
      { actor: ACTOR },
    );

    const stack: Stack = {
      nc,
      db,
      state: stateSvc,
      agents,
      sim: fleet.child,
      natsPid: natsServerPid(nats.port),
      natsMonitor,
    };
    const rows = [
      await measure(stack, "apply", "apply"),
      await measure(stack, "plan", "plan (after apply)"),
      await measure(stack, "apply", "apply again (no change)"),
    ];
    fleet.command({ type: "stats" });
    const stats = await fleet.next("stats", 10_000);

    console.log(
      `\nfan-out of a ${R}-resource module to ${N} simulated agents (concurrency ${concurrency}, ${execMs} ms simulated work per Execute)\n`,
    );
    console.log(
      [
        "run".padEnd(24),
        "all finished (s)".padStart(17),
        "server span (s)".padStart(16),
        "first start (s)".padStart(16),
        "ops/s".padStart(8),
        "succeeded".padStart(10),
        "resources changed".padStart(18),
        "  other",
      ].join(""),
    );
    for (const r of rows) {
      console.log(
        [
          r.kind.padEnd(24),
          r.seconds.toFixed(2).padStart(17),
          r.serverSeconds.toFixed(2).padStart(16),
          r.firstStartSeconds.toFixed(2).padStart(16),
          r.opsPerSecond.toFixed(0).padStart(8),
          String(r.succeeded).padStart(10),
          String(r.changed).padStart(18),
          `  ${r.other}`,
        ].join(""),
      );
    }
    printCosts(rows);
    console.log(`\nExecute calls answered by the simulated agents: ${stats.executes} (${stats.resources} resources)`);
    if (templateLoop) printRenderCpu(moduleYaml());
    const apply = rows[0]!;
    // 500 agents within 1.5 s; larger fleets at 1,000 operations/s or more (10,000 within 10 s).
    const limit = N <= 500 ? 1.5 : Math.max(1.5, N / 1000);
    console.log(
      `goal: ${N} agents applied in < ${limit} s → ${apply.seconds.toFixed(2)} s (${apply.opsPerSecond.toFixed(0)} ops/s): ${apply.seconds < limit && apply.succeeded === N ? "met" : "NOT met"}`,
    );
    console.log(
      `load average at the end: ${loadavg()
        .map((l) => l.toFixed(1))
        .join(" ")}`,
    );
    const dir = fileURLToPath(new URL("./results/", import.meta.url));
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `fanout-${N}-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    writeFileSync(
      file,
      JSON.stringify({ agents: N, resources: R, execMs, concurrency, templateLoop, rows, stats }, null, 2),
    );
    console.log(`raw figures: ${file}`);
  } finally {
    fleet?.command({ type: "stop" });
    await Promise.all(services.map((s) => stopService(s.child)));
    stopChildren();
    await sleep(500);
    await nc.close().catch(() => {});
    await db.drop().catch(() => {});
    await nats.stop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(`bench fanout: ${(err as Error).message}`);
    process.exit(1);
  },
);
