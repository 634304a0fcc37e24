// npm run bench -- gateway [--duration 15] [--connections 50] [--runs 3] [--node-options="--cpu-prof --cpu-prof-dir=/tmp/prof"]
// Authenticated GET /api/v1/operators (50 operators) through gateway → NATS → auth → Postgres,
// against a baseline measured in the same run: a bare fastify process running the same SQL, and
// once more with tracing on (every request sampled, spans exported over OTLP/HTTP to a loopback sink).
// Each of --runs measures the baseline and the gateway back to back, so a machine whose load drifts
// moves both figures of a ratio alike. --node-options is NODE_OPTIONS for the gateway and auth
// processes (profiling). Raw figures go to bench/results/gateway-<time>.json.
import { fork, type ChildProcess } from "node:child_process";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { cpus, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { createTestDatabase, ed25519, freePort, startNats, startSystem, type SystemHandle } from "@orch/kit/testing";

const { values } = parseArgs({
  options: {
    duration: { type: "string", default: "15" },
    connections: { type: "string", default: "50" },
    runs: { type: "string", default: "3" },
    "node-options": { type: "string", default: "" },
  },
});
const duration = Number(values.duration);
const connections = Number(values.connections);
const runs = Number(values.runs);
for (const [flag, n] of [
  ["duration", duration],
  ["connections", connections],
  ["runs", runs],
] as const) {
  if (!Number.isInteger(n) || n < 1 || n > 1000) {
    console.error(`bench gateway: --${flag} must be an integer in 1..1000`);
    process.exit(2);
  }
}
const GOAL = 0.6;
const CONSECUTIVE = 3;
const RESULTS = fileURLToPath(new URL("./results/", import.meta.url));

interface Result {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** CPU-ms (user + system) per request of each server process, over the measured window. */
  cpuMsPerRequest: Record<string, number>;
}

/** utime + stime of a process in ms (/proc/<pid>/stat, clock ticks of 10 ms). */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function load(url: string, headers: Record<string, string>, pids: Record<string, number>): Promise<Result> {
  // Warm-up so JIT, pools and caches are in steady state before measuring.
  await autocannon({ url, headers, connections, duration: Math.min(3, duration) });
  const before = Object.fromEntries(Object.entries(pids).map(([k, pid]) => [k, cpuMs(pid)]));
  const r = await autocannon({ url, headers, connections, duration });
  const total = r.requests.average * duration;
  const cpuMsPerRequest = Object.fromEntries(
    Object.entries(pids).map(([k, pid]) => [k, total > 0 ? (cpuMs(pid) - before[k]!) / total : 0]),
  );
  return {
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors,
    non2xx: r.non2xx,
    cpuMsPerRequest,
  };
}

/** An OTLP/HTTP receiver that only counts what it is sent: the exporter's full cost, no backend's. */
async function startTraceSink() {
  const seen = { requests: 0, bytes: 0 };
  const server = createServer((req, res) => {
    req.on("data", (chunk: Buffer) => (seen.bytes += chunk.length));
    req.on("end", () => {
      if (req.method === "POST" && req.url === "/v1/traces") seen.requests++;
      res.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const addr = server.address();
  const url = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
  return { url, seen, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

const load3 = () =>
  loadavg()
    .map((l) => l.toFixed(2))
    .join(" ");
const row = (name: string, r: Result) =>
  `${name.padEnd(28)} ${r.rps.toFixed(0).padStart(8)} req/s   p50 ${String(r.p50).padStart(4)} ms   p99 ${String(r.p99).padStart(4)} ms   errors ${r.errors + r.non2xx}   CPU ms/req ${Object.entries(
    r.cpuMsPerRequest,
  )
    .map(([k, v]) => `${k} ${v.toFixed(3)}`)
    .join(", ")}`;
const pidOf = (system: SystemHandle, name: string) => system.procs.get(name)!.child.pid!;

const nats = await startNats();
const db = await createTestDatabase("orch_bench");
const env: Record<string, string> = {
  ORCH_LOG_LEVEL: "warn",
  ...(values["node-options"] ? { NODE_OPTIONS: values["node-options"] } : {}),
};
let system = await startSystem({ nats, db, services: ["auth", "gateway"], env });
const sink = await startTraceSink();
let direct: ChildProcess | undefined;
let failed = false;
try {
  const token = await system.login(system.admin);
  for (let i = 1; i < 50; i++) {
    const r = await system.api("POST", "/api/v1/operators", {
      token,
      body: { name: `op-${i}`, public_key: ed25519().publicKeyHex },
    });
    if (r.status !== 201) throw new Error(`seed failed: ${r.status} ${r.text}`);
  }
  const check = await system.api("GET", "/api/v1/operators", { token });
  if (check.body.operators.length !== 50) throw new Error("expected 50 operators");

  const port = await freePort();
  direct = fork(new URL("./lib/direct-operators.ts", import.meta.url).pathname, [db.url, String(port)], {
    execArgv: ["--import", "tsx"],
    stdio: "inherit",
  });
  await new Promise((resolve) => direct!.once("message", resolve));

  console.log(
    `gateway bench: ${connections} connections, ${duration} s per measurement, ${runs} run(s), 50 operators per response, ${cpus().length} cores`,
  );
  const measured: { baseline: Result; gateway: Result; ratio: number; loadavg: number[] }[] = [];
  for (let i = 1; i <= runs; i++) {
    const baseline = await load(`http://127.0.0.1:${port}/api/v1/operators`, {}, { direct: direct.pid! });
    const gateway = await load(
      `${system.url}/api/v1/operators`,
      { authorization: `Bearer ${token}` },
      { gateway: pidOf(system, "gateway"), auth: pidOf(system, "auth") },
    );
    const ratio = gateway.rps / baseline.rps;
    measured.push({ baseline, gateway, ratio, loadavg: loadavg() });
    console.log(`run ${i}/${runs}`);
    console.log(`  ${row("direct fastify + pg", baseline)}`);
    console.log(`  ${row("gateway → NATS → auth → pg", gateway)}`);
    console.log(`  ratio (gateway / direct): ${ratio.toFixed(2)}   load average (1/5/15 min): ${load3()}`);
  }
  direct.kill();

  // The same processes restarted with tracing on, over the same database and admin.
  await system.stop();
  system = await startSystem({
    nats,
    db,
    services: ["auth", "gateway"],
    admin: system.admin,
    env: { ...env, OTEL_EXPORTER_OTLP_ENDPOINT: sink.url, OTEL_TRACES_SAMPLER: "always_on" },
  });
  const tracedToken = await system.login(system.admin);
  const traced = await load(
    `${system.url}/api/v1/operators`,
    { authorization: `Bearer ${tracedToken}` },
    { gateway: pidOf(system, "gateway"), auth: pidOf(system, "auth") },
  );
  const lastGateway = measured.at(-1)!.gateway;
  console.log(row("same, tracing on (100%)", traced));
  console.log(
    `ratio (tracing on / off, last run): ${(traced.rps / lastGateway.rps).toFixed(2)}   (OTLP sink received ${sink.seen.requests} exports, ${(sink.seen.bytes / 1e6).toFixed(1)} MB)`,
  );

  const ratios = measured.map((m) => m.ratio);
  let streak = 0;
  let best = 0;
  for (const r of ratios) {
    streak = r >= GOAL ? streak + 1 : 0;
    best = Math.max(best, streak);
  }
  const met = best >= CONSECUTIVE;
  console.log(`ratios: ${ratios.map((r) => r.toFixed(2)).join(" ")}`);
  console.log(
    `ratio ≥ ${GOAL.toFixed(2)} in ${CONSECUTIVE} consecutive runs: ${met ? "met" : "NOT met"}${runs < CONSECUTIVE ? ` (only ${runs} run(s))` : ""}`,
  );
  // Two cores: a busy machine moves both figures, so the load is part of the result.
  console.log(`load average (1/5/15 min): ${load3()}`);

  mkdirSync(RESULTS, { recursive: true });
  const file = `${RESULTS}gateway-${new Date().toISOString().replace(/[:.]/g, "-")}.json`;
  writeFileSync(
    file,
    `${JSON.stringify({ connections, duration, runs, goal: GOAL, met, cores: cpus().length, measured, traced, sink: sink.seen, loadavg: loadavg() }, null, 2)}\n`,
  );
  console.log(`raw figures: ${file}`);
} catch (err) {
  failed = true;
  console.error(err);
} finally {
  direct?.kill();
  await system.stop();
  await sink.close();
  await db.drop();
  await nats.stop();
}
if (failed) process.exit(1);
