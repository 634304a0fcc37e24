// npm run bench -- gateway [--duration 15] [--connections 50]
// Authenticated GET /api/v1/operators (50 operators) through gateway → NATS → auth → Postgres,
// against a baseline measured in the same run: a bare fastify process running the same SQL.
import { fork } from "node:child_process";
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import autocannon from "autocannon";
import { createTestDatabase, ed25519, freePort, startNats, startSystem } from "@orch/kit/testing";

const { values } = parseArgs({
  options: { duration: { type: "string", default: "15" }, connections: { type: "string", default: "50" } },
});
const duration = Number(values.duration);
const connections = Number(values.connections);

interface Result {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
}
async function load(url: string, headers: Record<string, string>): Promise<Result> {
  // Warm-up so JIT, pools and caches are in steady state before measuring.
  await autocannon({ url, headers, connections, duration: 3 });
  const r = await autocannon({ url, headers, connections, duration });
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, errors: r.errors, non2xx: r.non2xx };
}

const nats = await startNats();
const db = await createTestDatabase("orch_bench");
const system = await startSystem({ nats, db, services: ["auth", "gateway"], env: { ORCH_LOG_LEVEL: "warn" } });
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
  const direct = fork(new URL("./lib/direct-operators.ts", import.meta.url).pathname, [db.url, String(port)], {
    execArgv: ["--import", "tsx"],
    stdio: "inherit",
  });
  await new Promise((resolve) => direct.once("message", resolve));

  console.log(`gateway bench: ${connections} connections, ${duration} s per run, 50 operators per response`);
  const baseline = await load(`http://127.0.0.1:${port}/api/v1/operators`, {});
  const gateway = await load(`${system.url}/api/v1/operators`, { authorization: `Bearer ${token}` });
  direct.kill();

  const row = (name: string, r: Result) =>
    `${name.padEnd(28)} ${r.rps.toFixed(0).padStart(8)} req/s   p50 ${String(r.p50).padStart(4)} ms   p99 ${String(r.p99).padStart(4)} ms   errors ${r.errors + r.non2xx}`;
  console.log(row("direct fastify + pg", baseline));
  console.log(row("gateway → NATS → auth → pg", gateway));
  console.log(`ratio (gateway / direct): ${(gateway.rps / baseline.rps).toFixed(2)}   (goal ≥ 0.50)`);
  // Two cores: a busy machine moves both figures, so the load is part of the result.
  console.log(
    `load average (1/5/15 min): ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
} finally {
  await system.stop();
  await db.drop();
  await nats.stop();
}
