// The soak bench's judgement and measuring parts on their own: the RSS verdict (minute 2 → end),
// process discovery in /proc and the /metrics reading, without the whole system.
import { spawn } from "node:child_process";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import t from "tap";
import { healthPorts, listeningPorts, parseNodeMetrics } from "../../bench/lib/soak-metrics.js";
import { classify, descendants, rssMiB } from "../../bench/lib/soak-procs.js";
import { formatVerdict, verdict } from "../../bench/lib/soak-report.js";
import type { ProcSample, Sample } from "../../bench/lib/soak-sample.js";

const proc = (label: string, rss: number, pid = 100, kind: ProcSample["kind"] = "service"): ProcSample => ({
  label,
  kind,
  pid,
  rssMiB: rss,
});
const sample = (minute: number, procs: ProcSample[], final = false): Sample => ({
  atS: minute * 60,
  minute,
  final,
  load: [1, 1, 1],
  procs,
});

t.test("growth is measured from minute 2, not from the cold start", async (t) => {
  const samples = [0, 1, 2, 3, 4, 5].map((m) => sample(m, [proc("state", m < 2 ? 50 : 100 + m)], m === 5));
  const v = verdict(samples, 300);
  t.equal(v.judged, true);
  t.same(v.failures, []);
  t.equal(v.rows[0]!.fromMiB, 102);
  t.equal(v.rows[0]!.verdict, "ok");
  t.match(formatVerdict(v, 300), /every process within 10%/);
});

t.test("more than 10 % between minute 2 and the end fails the run", async (t) => {
  const samples = [0, 1, 2, 3, 4].map((m) =>
    sample(m, [proc("gateway", m >= 2 ? 100 + (m - 2) * 6 : 90, 1), proc("auth", 100, 2)], m === 4),
  );
  const v = verdict(samples, 240);
  t.equal(v.rows.find((r) => r.label === "gateway")!.verdict, "grew");
  t.equal(v.rows.find((r) => r.label === "auth")!.verdict, "ok");
  t.same(v.failures, ["gateway RSS grew 12.0%"]);
  t.match(formatVerdict(v, 240), /FAILED/);
});

t.test("the bench process itself is shown but never judged", async (t) => {
  const samples = [0, 1, 2, 3, 4].map((m) => sample(m, [proc("bench", 100 + m * 50, 1, "bench")], m === 4));
  const v = verdict(samples, 240);
  t.equal(v.rows[0]!.verdict, "not judged");
  t.same(v.failures, []);
});

t.test("runs under 4 minutes are too short to judge, but a process that died still fails them", async (t) => {
  const short = [sample(0, [proc("audit", 100, 7)]), sample(1, [proc("audit", 200, 7)], true)];
  const v = verdict(short, 75);
  t.equal(v.judged, false);
  t.same(v.failures, [], "doubling in a minute is warm-up, not judged");
  t.match(formatVerdict(v, 75), /too short to judge/);

  const died = verdict(
    [sample(0, [proc("audit", 100, 7), proc("notify", 100, 8)]), sample(0, [proc("notify", 100, 8)], true)],
    20,
  );
  t.same(died.failures, ["audit (pid 7) gone"]);
  const restarted = verdict([sample(0, [proc("audit", 100, 7)]), sample(0, [proc("audit", 100, 9)], true)], 20);
  t.same(restarted.failures, ["audit (pid 7) restarted"]);
});

t.test("command lines are classified as service, agent or nats-server; anything else is ignored", async (t) => {
  t.same(classify(["/usr/local/bin/node", "/work/main/services/gateway/dist/main.js"]), {
    kind: "service",
    name: "gateway",
  });
  t.same(classify(["node", "/x/agent/dist/main.js", "--data-dir", "/tmp/a"]), { kind: "agent" });
  t.same(classify(["/usr/sbin/nats-server", "-p", "4222"]), { kind: "nats" });
  t.equal(classify(["bash", "-i"]), undefined);
  t.equal(classify(["/usr/local/bin/node", "/work/main/services/gateway/src/main.ts"]), undefined);
});

t.test("descendants and RSS come from /proc", async (t) => {
  const child = spawn("sleep", ["30"]);
  t.teardown(() => void child.kill("SIGKILL"));
  await new Promise((r) => child.once("spawn", r));
  t.ok(
    descendants(process.pid).some((p) => p.pid === child.pid && p.argv[0] === "sleep"),
    "the child is found below this process",
  );
  const rss = rssMiB(process.pid)!;
  t.ok(rss > 10 && rss < 4096, `own RSS ${rss} MiB`);
  child.kill("SIGKILL");
  await new Promise((r) => child.once("exit", r));
  t.equal(rssMiB(child.pid!), undefined, "a reaped process has no RSS");
});

t.test("the health port is the listening port whose /metrics has the default collectors", async (t) => {
  const body = [
    "# HELP nodejs_eventloop_lag_mean_seconds x",
    'nodejs_eventloop_lag_mean_seconds{service="x"} 0.0105',
    'nodejs_eventloop_lag_p99_seconds{service="x"} 0.02',
    'nodejs_eventloop_lag_max_seconds{service="x"} 0.5',
    'nodejs_heap_size_used_bytes{service="x"} 52428800',
  ].join("\n");
  const other = createServer((_q, r) => r.writeHead(404).end()).listen(0, "127.0.0.1");
  const health = createServer((q, r) => (q.url === "/metrics" ? r.end(body) : r.writeHead(404).end())).listen(
    0,
    "127.0.0.1",
  );
  t.teardown(() => {
    other.close();
    health.close();
  });
  await Promise.all([other, health].map((s) => new Promise((r) => (s.listening ? r(null) : s.once("listening", r)))));
  const port = (health.address() as AddressInfo).port;
  const ports = listeningPorts(process.pid);
  t.ok(ports.includes(port) && ports.includes((other.address() as AddressInfo).port), "both listeners found");
  t.equal((await healthPorts([process.pid])).get(process.pid), port);
  // The monitor's 10 ms sampling interval is in every sample: the delay is what is above it.
  t.same(parseNodeMetrics(body), { lagMeanMs: 0.5, lagP99Ms: 10, lagMaxMs: 490, heapUsedMiB: 50 });
  t.equal(parseNodeMetrics("process_cpu_seconds_total 1"), undefined);
});
