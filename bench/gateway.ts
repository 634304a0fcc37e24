// npm run bench -- gateway [--duration 15] [--connections 50]
// Authenticated GET /api/v1/operators (50 operators) through gateway → NATS → auth → Postgres,
// against a baseline measured in the same run: a bare fastify process running the same SQL, and
// once more with tracing on (every request sampled, spans exported over OTLP/HTTP to a loopback sink).
import { fork } from "node:child_process";
import { createServer } from "node:http";
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

const nats = await startNats();
const db = await createTestDatabase("orch_bench");
const env = { ORCH_LOG_LEVEL: "warn" };
let system = await startSystem({ nats, db, services: ["auth", "gateway"], env });
const sink = await startTraceSink();
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
  const traced = await load(`${system.url}/api/v1/operators`, { authorization: `Bearer ${tracedToken}` });

  const row = (name: string, r: Result) =>
    `${name.padEnd(28)} ${r.rps.toFixed(0).padStart(8)} req/s   p50 ${String(r.p50).padStart(4)} ms   p99 ${String(r.p99).padStart(4)} ms   errors ${r.errors + r.non2xx}`;
  console.log(row("direct fastify + pg", baseline));
  console.log(row("gateway → NATS → auth → pg", gateway));
  console.log(row("same, tracing on (100%)", traced));
  console.log(`ratio (gateway / direct): ${(gateway.rps / baseline.rps).toFixed(2)}   (goal ≥ 0.50)`);
  console.log(
    `ratio (tracing on / off): ${(traced.rps / gateway.rps).toFixed(2)}   (OTLP sink received ${sink.seen.requests} exports, ${(sink.seen.bytes / 1e6).toFixed(1)} MB)`,
  );
  // Two cores: a busy machine moves both figures, so the load is part of the result.
  console.log(
    `load average (1/5/15 min): ${loadavg()
      .map((l) => l.toFixed(2))
      .join(" ")}`,
  );
} finally {
  await system.stop();
  await sink.close();
  await db.drop();
  await nats.stop();
}
