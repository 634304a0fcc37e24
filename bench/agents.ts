/**
 * npm run bench -- agents [--counts 1000,2000,5000,10000] [--steady 20] [--window 10] [--pings 1000]
 *
 * For each N: one agents-service process (services/agents/dist/main.js, fresh database) and one
 * load-generator child (bench/lib/sim-agent.ts) holding N real gRPC links. Reports the time until
 * all N got Welcome, the service's CPU and RSS at steady state (metrics every 15 s flowing), and
 * the latency of Pings to random agents through NATS (orch.agent.<id>.Ping → link → sim → back).
 *
 * Approval is done with the AgentsService.SetApproval RPC over NATS (no reconnect needed): the
 * service must start relaying requests to an agent once it is approved.
 */
import type { ChildProcess } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { cpus, loadavg } from "node:os";
import { parseArgs } from "node:util";
import { AgentControlService } from "@orch/contracts";
import { pingService, rpcClient, type NatsConnection } from "@orch/kit";
import { createTestDatabase, freePort, startNats, type DbHandle, type NatsHandle } from "@orch/kit/testing";
import { AGENTS_SERVICE_MAIN as SERVICE_MAIN, startAgentsServiceProcess } from "./lib/agents-process.js";
import { approveAll, startSimFleet, within, type SimFleet } from "./lib/sim-fleet.js";

const CLK_TCK = 100;

const { values } = parseArgs({
  options: {
    counts: { type: "string", default: "1000,2000,5000,10000" },
    steady: { type: "string", default: "20" },
    window: { type: "string", default: "10" },
    pings: { type: "string", default: "1000" },
    "per-channel": { type: "string", default: "100" },
    "metrics-interval": { type: "string", default: "15" },
  },
});
const counts = values.counts.split(",").map((s) => Number(s.trim()));
if (counts.some((n) => !Number.isInteger(n) || n < 1 || n > 50_000))
  fail("--counts must be a comma-separated list of integers 1..50000");
const steadyS = num("steady", 0, 600);
const windowS = num("window", 1, 120);
const pingCount = num("pings", 1, 100_000);
const perChannel = num("per-channel", 1, 10_000);
const metricsInterval = num("metrics-interval", 1, 3600);

function num(name: keyof typeof values, min: number, max: number): number {
  const n = Number(values[name]);
  if (!Number.isFinite(n) || n < min || n > max) fail(`--${name} must be a number in ${min}..${max}`);
  return n;
}

function fail(msg: string): never {
  console.error(`bench agents: ${msg}`);
  process.exit(2);
}

/** Every process this run started, killed if the bench itself dies half-way. */
const children = new Set<ChildProcess>();
process.on("exit", () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
});
/** Async teardown (nats-server, databases) for Ctrl-C: run in reverse, bounded, then exit. */
const teardown: (() => Promise<unknown>)[] = [];
for (const sig of ["SIGINT", "SIGTERM"] as const) {
  process.once(sig, () => {
    console.error(`bench agents: ${sig}, cleaning up`);
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
    const all = (async () => {
      for (const fn of teardown.reverse()) await fn().catch(() => {});
    })();
    void Promise.race([all, sleep(10_000)]).then(() => process.exit(130));
  });
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Resolves with `p`, or rejects after `ms` naming what was awaited. */
function openFileLimit(): number {
  const m = /^Max open files\s+(\d+|unlimited)/m.exec(readFileSync("/proc/self/limits", "utf8"));
  return !m || m[1] === "unlimited" ? Infinity : Number(m[1]);
}

/** utime + stime of a process, in seconds. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[11]) + Number(f[12])) / CLK_TCK; // fields 14 and 15 of proc(5), counted after the comm field
}

function rssMb(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return m ? Number(m[1]) / 1024 : NaN;
}

const pct = (sorted: number[], p: number) =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))] ?? NaN;

async function stopChild(child: ChildProcess, signal: NodeJS.Signals = "SIGTERM"): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const gone = new Promise<void>((r) => child.once("exit", () => r()));
  child.kill(signal);
  await Promise.race([gone, sleep(15_000)]);
  if (child.exitCode === null && child.signalCode === null) {
    child.kill("SIGKILL");
    await gone;
  }
}

interface Row {
  n: number;
  connectS: number;
  /** The generator's own CPU during the connect phase, % of one core: near 100 means it, not the service, set the pace. */
  simCpuPct: number;
  failed: number;
  retries: number;
  load1: number;
  approveS: number;
  cpuPct: number;
  rssMb: number;
  p50: number;
  p99: number;
  max: number;
  pingErrors: number;
  dropped: number;
  metricsSent: number;
  note: string;
}

const startService = (nats: NatsHandle, db: DbHandle, linkPort: number) =>
  startAgentsServiceProcess({ nats, db, linkPort, track: (c) => children.add(c) });

async function pingLatencies(
  nc: NatsConnection,
  nodeIds: string[],
  count: number,
): Promise<{ sorted: number[]; errors: number; firstError: string | null }> {
  const lat: number[] = [];
  let errors = 0;
  let firstError: string | null = null;
  for (let i = 0; i < count; i++) {
    const id = nodeIds[Math.floor(Math.random() * nodeIds.length)]!;
    const agent = rpcClient(nc, "", AgentControlService, { timeoutMs: 5_000, subjectBase: `orch.agent.${id}` });
    const t0 = performance.now();
    try {
      const r = await agent.ping({ payload: String(i) });
      if (r.nodeId !== id || r.payload !== String(i)) throw new Error(`wrong reply from ${r.nodeId}`);
      lat.push(performance.now() - t0);
    } catch (err) {
      errors++;
      firstError ??= (err as Error).message;
    }
  }
  return { sorted: lat.sort((a, b) => a - b), errors, firstError };
}

/** Waits until one approved agent answers a Ping (the approval reached the replica holding the link). */
async function firstPing(nc: NatsConnection, nodeId: string): Promise<string | null> {
  const agent = rpcClient(nc, "", AgentControlService, { timeoutMs: 2_000, subjectBase: `orch.agent.${nodeId}` });
  let last = "";
  for (let i = 0; i < 20; i++) {
    try {
      await agent.ping({ payload: "hello" });
      return null;
    } catch (err) {
      last = (err as Error).message;
      await sleep(500);
    }
  }
  return last;
}

async function runOne(nats: NatsHandle, nc: NatsConnection, n: number): Promise<Row> {
  const row: Row = {
    n,
    connectS: NaN,
    simCpuPct: NaN,
    failed: 0,
    retries: 0,
    load1: NaN,
    approveS: NaN,
    cpuPct: NaN,
    rssMb: NaN,
    p50: NaN,
    p99: NaN,
    max: NaN,
    pingErrors: 0,
    dropped: 0,
    metricsSent: 0,
    note: "",
  };
  const db = await createTestDatabase("orch_bench");
  teardown.push(() => db.drop());
  const linkPort = await freePort();
  let svc: Awaited<ReturnType<typeof startService>> | undefined;
  let fleet: SimFleet | undefined;
  try {
    svc = await startService(nats, db, linkPort);
    const pid = svc.child.pid!;
    for (let i = 0; i < 100 && !(await pingService(nc, "agents", 500)); i++) await sleep(200);

    fleet = startSimFleet({ target: `127.0.0.1:${linkPort}`, count: n, perChannel, metricsIntervalS: metricsInterval });
    children.add(fleet.child);
    const keys = await fleet.next("keys", 120_000);
    const welcomed = await within(
      Promise.race([fleet.next("welcomed", 60_000 + n * 30), svc.exited]),
      65_000 + n * 30,
      "all links welcomed",
    );
    row.connectS = welcomed.ms / 1000;
    row.simCpuPct = (welcomed.cpuMs / welcomed.ms) * 100;
    row.failed = welcomed.failedIds.length;
    row.retries = welcomed.retries;
    if (welcomed.firstError) row.note = `handshake (retried): ${welcomed.firstError}`;
    console.error(
      `  N=${n}: ${welcomed.count} welcomed in ${row.connectS.toFixed(2)} s (${welcomed.retries} retries)${row.failed ? `, ${row.failed} gave up (${welcomed.firstError})` : ""}`,
    );
    const failed = new Set(welcomed.failedIds);
    const up = keys.nodeIds.filter((id) => !failed.has(id));
    if (!up.length) throw new Error(`no link came up: ${welcomed.firstError}`);

    row.approveS = await within(approveAll(nc, up), 60_000 + n * 20, "approve all");
    console.error(`  N=${n}: approved in ${row.approveS.toFixed(2)} s (SetApproval over NATS)`);
    const pingErr = await firstPing(nc, up[0]!);
    if (pingErr) row.note = `first ping failed: ${pingErr}`;

    console.error(`  N=${n}: steady state: waiting ${steadyS} s, then sampling CPU for ${windowS} s`);
    await sleep(steadyS * 1000);
    const c0 = cpuSeconds(pid);
    const t0 = performance.now();
    await sleep(windowS * 1000);
    row.cpuPct = ((cpuSeconds(pid) - c0) / ((performance.now() - t0) / 1000)) * 100;
    row.rssMb = rssMb(pid);
    row.load1 = loadavg()[0]!;

    const pings = await within(pingLatencies(nc, up, pingCount), 10_000 + pingCount * 6_000, "pings");
    row.p50 = pct(pings.sorted, 50);
    row.p99 = pct(pings.sorted, 99);
    row.max = pings.sorted.at(-1) ?? NaN;
    row.pingErrors = pings.errors;
    if (pings.firstError && !row.note) row.note = `ping: ${pings.firstError}`;

    fleet.command({ type: "stats" });
    const st = await fleet.next("stats", 10_000);
    row.dropped = st.dropped;
    row.metricsSent = st.metrics;
    if (st.firstDrop && !row.note) row.note = `link dropped: ${st.firstDrop}`;
  } catch (err) {
    row.note = (err as Error).message.split("\n")[0]!;
  } finally {
    if (row.note && svc)
      console.error(
        `  N=${n}: agents-service output (tail):\n${svc.output.join("").split("\n").slice(-15).join("\n")}`,
      );
    if (fleet) {
      fleet.command({ type: "stop" });
      await stopChild(fleet.child);
    }
    if (svc) await stopChild(svc.child);
    await db.drop();
  }
  return row;
}

function table(rows: Row[]): string {
  const head = [
    "N",
    "connect all (s)",
    "links/s",
    "retries",
    "gave up",
    "generator CPU %",
    "approve (s)",
    "CPU % of 1 core",
    "RSS (MB)",
    "ping p50 (ms)",
    "ping p99 (ms)",
    "ping max (ms)",
    "ping errors",
    "dropped",
    "metrics sent",
    "load avg",
  ];
  const f = (v: number, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : "-");
  const body = rows.map((r) => [
    String(r.n),
    f(r.connectS, 2),
    f((r.n - r.failed) / r.connectS, 0),
    String(r.retries),
    String(r.failed),
    f(r.simCpuPct, 0),
    f(r.approveS, 2),
    f(r.cpuPct),
    f(r.rssMb, 0),
    f(r.p50, 2),
    f(r.p99, 2),
    f(r.max, 2),
    String(r.pingErrors),
    String(r.dropped),
    String(r.metricsSent),
    f(r.load1),
  ]);
  const w = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => c.padStart(w[i]!)).join("  ");
  const notes = rows.filter((r) => r.note).map((r) => `  N=${r.n}: ${r.note}`);
  return [line(head), ...body.map(line), ...(notes.length ? ["notes:", ...notes] : [])].join("\n");
}

/** True when every N was measured through to its pings; a goal missed is not a failure. */
async function main(): Promise<boolean> {
  if (!existsSync(SERVICE_MAIN))
    fail(
      `${SERVICE_MAIN} is missing: build it first (npx tsc -p packages/contracts && npx tsc -p packages/kit && npx tsc -p services/agents)`,
    );
  const neededFds = Math.ceil(Math.max(...counts) / perChannel) + 256;
  const limit = openFileLimit();
  if (limit < neededFds)
    fail(
      `the open-file limit is ${limit}, but ${neededFds} descriptors are needed (one TCP connection per ${perChannel} links); raise it with \`ulimit -n ${neededFds * 2}\` or pass a larger --per-channel`,
    );

  console.log(
    `agents bench (${cpus().length} cores, load average ${loadavg()[0]!.toFixed(1)} at the start): counts ${counts.join(", ")}; ${perChannel} links per gRPC connection; metrics every ${metricsInterval} s; steady ${steadyS} s + CPU window ${windowS} s; ${pingCount} pings (sequential, random agent)`,
  );
  const nats = await startNats();
  teardown.push(() => nats.stop());
  const nc = await nats.connect("bench");
  const rows: Row[] = [];
  try {
    for (const n of counts) {
      console.error(`N=${n}: starting`);
      const row = await runOne(nats, nc, n);
      rows.push(row);
      console.log(`\n${table([row])}`);
    }
  } finally {
    await nats.stop();
  }
  console.log(
    `\nsummary (one agents-service process; ${cpus().length} cores, load average ${loadavg()[0]!.toFixed(1)} at the end):\n${table(rows)}`,
  );
  const goal = rows.find((r) => r.n === 5000);
  if (goal)
    console.log(
      `goal at N=5000 (CPU < 100 % of one core, ping p99 < 50 ms): ${goal.cpuPct < 100 && goal.p99 < 50 ? "met" : "NOT met"} (CPU ${goal.cpuPct.toFixed(1)} %, p99 ${goal.p99.toFixed(2)} ms)`,
    );
  // No ping figure means the run stopped half-way (its note says where) or no agent answered at all.
  const broken = rows.filter((r) => !Number.isFinite(r.p99));
  for (const r of broken) console.error(`bench agents: N=${r.n} broke: ${r.note || "no ping answered"}`);
  return broken.length === 0;
}

const hardStop = setTimeout(() => {
  console.error("bench agents: exceeded its overall time limit; exiting");
  process.exit(1);
}, 40 * 60_000);
hardStop.unref();

process.exit((await main()) ? 0 : 1);
