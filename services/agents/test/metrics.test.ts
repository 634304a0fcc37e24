import t from "tap";
import { OrchError } from "@orch/kit";
import { createTestDatabase, eventually, silentLogger, startNats } from "@orch/kit/testing";
import { pruneMetrics } from "../src/retention.js";
import { agentsClient, memIdentity, startAgentsService, testLink } from "./harness.js";

// Metrics frames → batched rows → history (since/until/limit, newest first) and latest; retention.
const nats = await startNats();
const db = await createTestDatabase();
const svc = await startAgentsService(nats, db);
const nc = await nats.connect("caller");
const { c, as } = agentsClient(nc);
t.teardown(async () => {
  await svc.stop();
  await db.drop();
  await nats.stop();
});

const sample = (takenAt: number, cpu: number) => ({
  takenAt,
  cpuPercent: cpu,
  load1: 0.5,
  load5: 0.4,
  load15: 0.3,
  memoryTotal: 8e9,
  memoryUsed: 2e9,
  diskTotal: 1e11,
  diskUsed: 4e10,
  netRxBytes: 1000 + cpu,
  netTxBytes: 2000 + cpu,
  uptimeSeconds: 3600,
});

async function code(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return "ok";
  } catch (e) {
    return e instanceof OrchError ? `${e.code}/${e.reason}` : String(e);
  }
}

t.test("samples are stored and read back newest first, filtered and limited", async (t) => {
  const id = memIdentity();
  const link = testLink(svc.server, id);
  await link.up();
  const base = Date.now() - 10_000;
  for (let i = 0; i < 5; i++) link.send()({ frame: { case: "metrics", value: sample(base + i * 1000, i * 10) } });
  await eventually(async () => (await c.getMetrics({ nodeId: id.nodeId }, as)).samples.length === 5);

  const all = (await c.getMetrics({ nodeId: id.nodeId }, as)).samples;
  t.same(
    all.map((s) => s.takenAt),
    [4, 3, 2, 1, 0].map((i) => base + i * 1000),
    "newest first",
  );
  t.same(
    all.map((s) => s.cpuPercent),
    [40, 30, 20, 10, 0],
  );
  t.match(
    all[0],
    { load1: 0.5, memoryTotal: 8e9, diskUsed: 4e10, netRxBytes: 1040, uptimeSeconds: 3600 },
    "every field round-trips",
  );

  const latest = await c.getLatestMetrics({ id: id.nodeId }, as);
  t.equal(latest.nodeId, id.nodeId);
  t.same(latest.sample, all[0], "latest is the newest of the history");

  const window = (await c.getMetrics({ nodeId: id.nodeId, since: base + 1000, until: base + 3000 }, as)).samples.map(
    (s) => s.takenAt,
  );
  t.same(window, [base + 2000, base + 1000], "since is inclusive, until exclusive");
  t.equal((await c.getMetrics({ nodeId: id.nodeId, limit: 2 }, as)).samples.length, 2);

  // A sample stamped far from the server's clock is filed under the server's time instead.
  link.send()({ frame: { case: "metrics", value: sample(Date.now() + 3_600_000, 99) } });
  const skewed = await eventually(async () =>
    (await c.getMetrics({ nodeId: id.nodeId, limit: 1 }, as)).samples.find((s) => s.cpuPercent === 99),
  );
  t.ok(Math.abs(skewed.takenAt - Date.now()) < 60_000, "clock skew is clamped");

  const before = Number((await c.getAgent({ id: id.nodeId }, as)).lastSeen);
  t.ok(before >= base, "metrics keep last_seen current");
  link.close();
});

t.test("bad requests are refused with the field named", async (t) => {
  const id = memIdentity();
  const link = testLink(svc.server, id);
  await link.up();
  t.equal(await code(c.getLatestMetrics({ id: id.nodeId }, as)), "NOT_FOUND/no_metrics", "no samples yet");
  t.equal(await code(c.getMetrics({ nodeId: "9".repeat(32) }, as)), "NOT_FOUND/agent_not_found");
  t.equal(await code(c.getLatestMetrics({ id: "9".repeat(32) }, as)), "NOT_FOUND/agent_not_found");
  t.equal(await code(c.getMetrics({ nodeId: id.nodeId, limit: 1001 }, as)), "INVALID_ARGUMENT/invalid_limit");
  t.equal(await code(c.getMetrics({ nodeId: id.nodeId, limit: -1 }, as)), "INVALID_ARGUMENT/invalid_limit");
  t.equal(await code(c.getMetrics({ nodeId: id.nodeId, since: -5 }, as)), "INVALID_ARGUMENT/invalid_since");
  t.equal(await code(c.getMetrics({ nodeId: id.nodeId, since: 10, until: 5 }, as)), "INVALID_ARGUMENT/invalid_range");
  t.equal(await code(c.getMetrics({ nodeId: id.nodeId, limit: 1000 }, as)), "ok", "1000 is allowed");
  link.close();
});

t.test("retention deletes samples older than the window and keeps the rest", async (t) => {
  const now = Date.now();
  const day = 86_400_000;
  await svc.deps.pool.query(
    `INSERT INTO metrics (node_id, taken_at, cpu_percent, load1, load5, load15, memory_total, memory_used, disk_total, disk_used, net_rx_bytes, net_tx_bytes, uptime_seconds)
     SELECT 'retention-node', $1::bigint - g * 3600000, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 FROM generate_series(0, 10 * 24) g`,
    [now],
  );
  const deleted = await pruneMetrics(svc.deps.pool, {
    clock: { now: () => now },
    log: silentLogger(),
    retentionDays: 7,
  });
  const left = (
    await svc.deps.pool.query(
      "SELECT min(taken_at) AS oldest, count(*) AS n FROM metrics WHERE node_id = 'retention-node'",
    )
  ).rows[0];
  t.equal(deleted, 3 * 24, "three days of hourly samples are gone");
  t.equal(Number(left.n), 7 * 24 + 1);
  t.ok(Number(left.oldest) >= now - 7 * day, "nothing older than 7 days is left");
});

t.test("history reads walk the (node_id, taken_at) index", async (t) => {
  await svc.deps.pool.query(
    `INSERT INTO metrics (node_id, taken_at, cpu_percent, load1, load5, load15, memory_total, memory_used, disk_total, disk_used, net_rx_bytes, net_tx_bytes, uptime_seconds)
     SELECT 'node-' || (g % 50), 1700000000000 + g * 1000, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0 FROM generate_series(1, 50000) g`,
  );
  await svc.deps.pool.query("ANALYZE metrics");
  const plan = (
    await svc.deps.pool.query(
      "EXPLAIN SELECT * FROM metrics WHERE node_id = 'node-7' AND taken_at >= 0 ORDER BY taken_at DESC LIMIT 100",
    )
  ).rows
    .map((r) => r["QUERY PLAN"])
    .join("\n");
  t.match(plan, /Index Scan using metrics_node_taken/, "no sequential scan or sort over the table");
  t.notMatch(plan, /Sort/);
});
