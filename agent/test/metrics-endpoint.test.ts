import { METRICS } from "@orch/kit/metrics";
import { createTestDatabase, eventually, freePort, startNats } from "@orch/kit/testing";
import t from "tap";
import { agentPool, startAgentsService, type AgentsUnderTest } from "../../services/agents/test/harness.js";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { parseOptions } from "../src/options.js";

// A real orch-agent process linked to the real agents service: /metrics only when asked for.
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const port = await freePort();
const svc: AgentsUnderTest = await startAgentsService(nats, db, { link_port: port });
let svcStopped = false;
const stopService = async () => {
  if (!svcStopped) await svc.stop();
  svcStopped = true;
};
const agents = agentPool();
t.teardown(async () => {
  await agents.stop();
  await stopService();
});
const server = `127.0.0.1:${port}`;

const scrape = (listen: string) =>
  fetch(`http://${listen}/metrics`).then(
    async (r) => (r.ok ? r.text() : undefined),
    () => undefined,
  );
const AGENT_METRICS = Object.entries(METRICS)
  .filter(([, m]) => m.where.startsWith("orch-agent"))
  .map(([name]) => name);

t.test("unit: --metrics-listen and ORCH_AGENT_METRICS_LISTEN, off by default", async (t) => {
  const on = (argv: string[], env = {}) => {
    const o = parseOptions(["--server", "h:1", ...argv], env);
    return typeof o === "object" ? o.metricsListen : "not options";
  };
  t.equal(on([]), undefined);
  t.equal(on(["--metrics-listen", "127.0.0.1:9464"]), "127.0.0.1:9464");
  t.equal(on([], { ORCH_AGENT_METRICS_LISTEN: "[::1]:9464" }), "[::1]:9464");
  t.equal(on(["--metrics-listen", "0.0.0.0:1"], { ORCH_AGENT_METRICS_LISTEN: "[::1]:9464" }), "0.0.0.0:1");
  for (const bad of ["9464", "h:0", "h:99999"])
    t.throws(() => on(["--metrics-listen", bad]), { message: /--metrics-listen must be host:port/ }, bad);
});

t.test("without the flag the agent listens on no TCP port", async (t) => {
  const a = agents.spawn(["--server", server, "--no-terminal"], { env: { ORCH_AGENT_METRICS_LISTEN: "" } });
  await a.nodeId();
  await eventually(() => a.records().some((r) => r.msg === "link up"));
  t.same(listeningTcpPorts(a.child.pid!), []);
  t.notOk(a.records().some((r) => r.msg === "serving Prometheus metrics"));
  await a.signal("SIGTERM");
});

t.test("with --metrics-listen: the catalogue's agent metrics, the link gauge following the link", async (t) => {
  const listen = `127.0.0.1:${await freePort()}`;
  const a = agents.spawn(["--server", server, "--no-terminal", "--metrics-listen", listen]);
  await a.nodeId();
  const text = await eventually(async () => {
    const body = await scrape(listen);
    return body && /^orch_agent_link_connected 1$/m.test(body) ? body : undefined;
  });
  t.ok(AGENT_METRICS.length >= 2);
  for (const name of AGENT_METRICS) {
    t.match(text, new RegExp(`^# HELP ${name} `, "m"), `${name} HELP`);
    t.match(text, new RegExp(`^# TYPE ${name} (gauge|counter)$`, "m"), `${name} TYPE`);
  }
  t.match(text, /^process_cpu_user_seconds_total /m, "Node default metrics");
  t.equal((await fetch(`http://${listen}/other`)).status, 404);
  // The link drops when the service goes away: the gauge says so.
  await stopService();
  await eventually(async () => /^orch_agent_link_connected 0$/m.test((await scrape(listen)) ?? ""));
  await a.signal("SIGTERM");
});

/** TCP ports the process listens on: its socket inodes that /proc/net/tcp{,6} lists in state LISTEN (0A). */
function listeningTcpPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`, { encoding: "utf8" }) ?? "");
    if (m) inodes.add(m[1]!);
  }
  const ports: number[] = [];
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"])
    for (const line of readFileSync(file, "utf8").split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f[3] === "0A" && inodes.has(f[9]!)) ports.push(Number.parseInt(f[1]!.split(":")[1]!, 16));
    }
  return ports;
}
