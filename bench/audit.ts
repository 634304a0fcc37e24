// npm run bench -- audit [--events 1000000] [--samples 200] [--ingest-seconds 60]
// GET /api/v1/audit latency at 1M stored events through the real gateway → NATS → audit → Postgres
// for every query shape, and end-to-end ingest (JetStream publish → visible in GET /audit).
// Needs built services (npm run build). Goals: p99 < 50 ms per shape; ingest ≥ 5,000 events/s.
import { loadavg } from "node:os";
import { parseArgs } from "node:util";
import { request } from "node:http";
import { Agent } from "node:http";
import pg from "pg";
import { toBinary, create } from "@bufbuild/protobuf";
import { jetstream } from "@nats-io/jetstream";
import { AuditEventSchema } from "@orch/contracts";
import { ensureAuditStream } from "@orch/kit";
import { createTestDatabase, startNats, startSystem } from "@orch/kit/testing";
import { monotonicFactory } from "ulid";

const { values } = parseArgs({
  options: {
    events: { type: "string", default: "1000000" },
    samples: { type: "string", default: "200" },
    "ingest-seconds": { type: "string", default: "60" },
  },
});
const TOTAL = Number(values.events);
const SAMPLES = Number(values.samples);
const INGEST_SECONDS = Number(values["ingest-seconds"]);
const DAY = 86_400_000;

// A fleet: 2,000 agents, 25 operators, and a catalogue-like mix of event types.
const agents = Array.from({ length: 2000 }, (_, i) => ({
  id: `node-${i.toString(16).padStart(6, "0")}`,
  name: `${["web", "db", "cache", "worker"][i % 4]}-${i}`,
  type: "agent",
}));
const operators = Array.from({ length: 25 }, (_, i) => ({
  id: `01OPERATOR${String(i).padStart(16, "0")}`,
  name: `op-${i}`,
  type: "operator",
}));
const system = { id: "system", name: "system", type: "system" };
type Ref = { id: string; name: string; type: string };
const pick = <T>(a: readonly T[]): T => a[Math.floor(Math.random() * a.length)]!;
const mix: Array<[weight: number, type: string, who: () => [Ref, Ref]]> = [
  [
    30,
    "agent.connected",
    () => {
      const a = pick(agents);
      return [a, a];
    },
  ],
  [
    20,
    "agent.disconnected",
    () => {
      const a = pick(agents);
      return [a, a];
    },
  ],
  [
    12,
    "state.apply.succeeded",
    () => [
      pick(agents),
      { id: `m${Math.floor(Math.random() * 50)}`, name: `module-${Math.floor(Math.random() * 50)}`, type: "module" },
    ],
  ],
  [3, "state.apply.failed", () => [pick(agents), { id: "m1", name: "module-1", type: "module" }]],
  [6, "state.plan.completed", () => [pick(agents), { id: "m2", name: "module-2", type: "module" }]],
  [
    6,
    "secret.used",
    () => [pick(agents), { id: "s1", name: `secret-${Math.floor(Math.random() * 100)}`, type: "secret" }],
  ],
  [
    5,
    "auth.login.succeeded",
    () => {
      const o = pick(operators);
      return [o, o];
    },
  ],
  [2, "auth.login.failed", () => [system, { id: "k", name: "unknown-key", type: "public_key" }]],
  [4, "agent.tags.updated", () => [pick(operators), pick(agents)]],
  [2, "agent.approved", () => [pick(operators), pick(agents)]],
  [3, "drift.detected", () => [system, pick(agents)]],
  [2, "drift.cleared", () => [system, pick(agents)]],
  [2, "terminal.session.opened", () => [pick(operators), pick(agents)]],
  [2, "terminal.session.closed", () => [pick(operators), pick(agents)]],
  [1, "module.uploaded", () => [pick(operators), { id: "m3", name: "module-3", type: "module" }]],
];
const weights = mix.reduce((s, m) => s + m[0], 0);
function randomEvent(): [string, Ref, Ref] {
  let r = Math.random() * weights;
  for (const [w, type, who] of mix) {
    if ((r -= w) < 0) return [type, ...who()];
  }
  return ["agent.connected", agents[0]!, agents[0]!];
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

const nats = await startNats();
const db = await createTestDatabase("orch_bench_audit");
const sys = await startSystem({ nats, db, services: ["auth", "audit", "gateway"], env: { ORCH_LOG_LEVEL: "warn" } });
const pool = new pg.Pool({ connectionString: db.url, max: 4, options: "-c search_path=audit" });
try {
  const token = await sys.login(sys.admin);

  // --- bulk load: multi-row INSERTs straight into the service's table (ids minted from the times) ---
  const end = Date.now() - 60_000;
  const start = end - 30 * DAY;
  const t0 = Date.now();
  const next = monotonicFactory();
  const BATCH = 20_000;
  for (let done = 0; done < TOTAL; done += BATCH) {
    const n = Math.min(BATCH, TOTAL - done);
    const cols: unknown[][] = Array.from({ length: 12 }, () => []);
    for (let i = 0; i < n; i++) {
      const at = Math.floor(start + ((done + i) / TOTAL) * (end - start));
      const [type, actor, target] = randomEvent();
      const row = [
        next(at),
        at,
        type,
        type.endsWith("failed") ? "warning" : "info",
        `${actor.name} ${type} ${target.name}`,
        actor.id,
        actor.name,
        actor.type,
        target.id,
        target.name,
        target.type,
        JSON.stringify({ seq: done + i, bench: true }),
      ];
      for (const [k, v] of row.entries()) cols[k]!.push(v);
    }
    await pool.query(
      `INSERT INTO events (id, ts, event_type, severity, summary, actor_id, actor_name, actor_type, target_id, target_name, target_type, metadata)
       SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::jsonb[])`,
      cols,
    );
    if ((done / BATCH) % 10 === 0) process.stdout.write(`\rloading ${done + n} / ${TOTAL}`);
  }
  await pool.query("ANALYZE events");
  const stored = Number((await pool.query("SELECT count(*) FROM events")).rows[0].count);
  console.log(
    `\rloaded ${stored.toLocaleString("en")} events over 30 days in ${((Date.now() - t0) / 1000).toFixed(1)} s`,
  );

  // --- query latency through the gateway, one request at a time ---
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const get = (path: string) =>
    new Promise<{ ms: number; body: any }>((resolve, reject) => {
      const t = performance.now();
      const req = request(`${sys.url}${path}`, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => {
          const ms = performance.now() - t;
          if (res.statusCode !== 200) reject(new Error(`${path}: ${res.statusCode} ${text.slice(0, 200)}`));
          else resolve({ ms, body: JSON.parse(text) });
        });
      });
      req.on("error", reject);
      req.end();
    });
  const iso = (ms: number) => new Date(ms).toISOString();
  const randomTime = () => start + Math.random() * (end - start);
  const dayWindow = () => {
    const a = randomTime();
    return `after=${iso(a)}&before=${iso(a + DAY)}`;
  };
  const types = mix.map((m) => m[1]);
  const categories = ["agent", "state", "state.apply", "auth", "drift", "terminal.session", "secret"];
  const shapes: Array<[string, () => string]> = [
    ["no filter", () => ""],
    ["no filter, limit=500 (extra)", () => "limit=500"],
    ["agent (name)", () => `agent=${pick(agents).name}`],
    ["agent (node id)", () => `agent=${pick(agents).id}`],
    ["operator", () => `operator=${pick(operators).name}`],
    ["event_type", () => `event_type=${pick(types)}`],
    ["category", () => `category=${pick(categories)}`],
    ["after", () => `after=${iso(randomTime())}`],
    ["before", () => `before=${iso(randomTime())}`],
    ["after + before (1 day)", dayWindow],
    ["category + time range (1 day)", () => `category=${pick(categories)}&${dayWindow()}`],
    ["agent + category", () => `agent=${pick(agents).name}&category=state`],
    ["rare: event_type module.uploaded", () => "event_type=module.uploaded"],
  ];
  for (let i = 0; i < 50; i++) await get(`/api/v1/audit?${shapes[i % shapes.length]![1]()}`); // warm-up
  console.log(
    `\nGET /api/v1/audit through the gateway, ${SAMPLES} sequential samples per shape (limit 50 unless stated); load average ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
  const report: Array<[string, number, number, number]> = [];
  const line = (name: string, xs: number[], rows: number) => {
    report.push([name, pct(xs, 50), pct(xs, 99), rows]);
    console.log(
      `${name.padEnd(44)} p50 ${pct(xs, 50).toFixed(1).padStart(6)} ms   p99 ${pct(xs, 99).toFixed(1).padStart(6)} ms   avg rows ${rows.toFixed(0).padStart(4)}${pct(xs, 99) < 50 ? "" : "   ABOVE GOAL"}`,
    );
  };
  for (const [name, qs] of shapes) {
    const xs: number[] = [];
    let rows = 0;
    for (let i = 0; i < SAMPLES; i++) {
      const r = await get(`/api/v1/audit?${qs()}`);
      xs.push(r.ms);
      rows += r.body.events.length;
    }
    line(name, xs, rows / SAMPLES);
  }
  // Paging: walks of 20 pages (cursor = last id), every page request timed; the 20th page separately.
  for (const [name, qs] of [
    ["paging 20 deep, no filter", () => ""],
    ["paging 20 deep, category=agent", () => "category=agent"],
  ] as const) {
    const all: number[] = [];
    const deepest: number[] = [];
    let rows = 0;
    while (all.length < SAMPLES * 2) {
      let cursor = "";
      const f = qs();
      for (let page = 1; page <= 20; page++) {
        const r = await get(`/api/v1/audit?limit=50${f ? `&${f}` : ""}${cursor ? `&cursor=${cursor}` : ""}`);
        all.push(r.ms);
        rows += r.body.events.length;
        if (page === 20) deepest.push(r.ms);
        cursor = r.body.next_cursor;
      }
    }
    line(`${name} (every page)`, all, rows / all.length);
    console.log(
      `${"  20th page only".padEnd(44)} p50 ${pct(deepest, 50).toFixed(1).padStart(6)} ms   p99 ${pct(deepest, 99).toFixed(1).padStart(6)} ms   (${deepest.length} walks)`,
    );
  }

  // --- ingest: publish on JetStream at full speed, measure until every event is visible ---
  const nc = await nats.connect("bench-publisher");
  await ensureAuditStream(nc, { replicas: 1, maxAgeDays: 1 });
  const js = jetstream(nc, { timeout: 30_000 });
  const mint = monotonicFactory();
  const published: string[] = [];
  const pubStart = Date.now();
  const until = pubStart + INGEST_SECONDS * 1000;
  let inflight = 0;
  let failures = 0;
  const WINDOW = 2000;
  const samplesAt = new Map<string, number>();
  let lastVisibleId = "";
  const visibleAt: Array<[string, number]> = [];
  let polling = true;
  // Watches the newest visible ingest event (storage follows the publish order closely).
  const poller = (async () => {
    while (polling) {
      const r = await get("/api/v1/audit?event_type=bench.ingest&limit=1").catch(() => undefined);
      const id = r?.body.events[0]?.id as string | undefined;
      if (id && id !== lastVisibleId) {
        lastVisibleId = id;
        visibleAt.push([id, Date.now()]);
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  })();
  await new Promise<void>((resolve) => {
    const pump = () => {
      while (inflight < WINDOW && Date.now() < until) {
        const [, actor, target] = randomEvent();
        const at = Date.now();
        const ev = create(AuditEventSchema, {
          id: mint(at),
          timestamp: new Date(at).toISOString(),
          eventType: "bench.ingest",
          severity: "info",
          summary: "ingest",
          actor,
          target,
          metadata: { n: published.length },
        });
        published.push(ev.id);
        if (published.length % 1000 === 0) samplesAt.set(ev.id, at);
        inflight++;
        js.publish("audit.bench.ingest", toBinary(AuditEventSchema, ev), { msgID: ev.id })
          .catch(() => failures++)
          .finally(() => {
            inflight--;
            pump();
          });
      }
      if (inflight === 0 && Date.now() >= until) resolve();
    };
    pump();
  });
  const pubEnd = Date.now();
  const count = async () =>
    Number((await pool.query("SELECT count(*) FROM events WHERE event_type = 'bench.ingest'")).rows[0].count);
  let visible = await count();
  while (visible < published.length - failures) {
    await new Promise((r) => setTimeout(r, 100));
    visible = await count();
    if (Date.now() - pubEnd > 300_000) break;
  }
  const allVisible = Date.now();
  polling = false;
  await poller;
  const lat: number[] = [];
  for (const [id, at] of samplesAt) {
    const seen = visibleAt.find(([v]) => v >= id);
    if (seen) lat.push(seen[1] - at);
  }
  const seconds = (allVisible - pubStart) / 1000;
  console.log(
    `\ningest: ${published.length.toLocaleString("en")} events published in ${((pubEnd - pubStart) / 1000).toFixed(1)} s (${(published.length / ((pubEnd - pubStart) / 1000)).toFixed(0)}/s, ${failures} failed publishes)`,
  );
  console.log(
    `        all ${visible.toLocaleString("en")} visible in GET /audit ${((allVisible - pubEnd) / 1000).toFixed(1)} s after the last publish`,
  );
  console.log(
    `        end to end: ${(visible / seconds).toFixed(0)} events/s sustained over ${seconds.toFixed(1)} s${visible / seconds >= 5000 ? "" : "   BELOW GOAL"} (goal ≥ 5,000/s)`,
  );
  if (lat.length)
    console.log(
      `        publish → visible latency (every 1000th event, 50 ms polling): p50 ${pct(lat, 50)} ms   p99 ${pct(lat, 99)} ms`,
    );
  const worst = Math.max(...report.filter((r) => !r[0].includes("extra")).map((r) => r[2]));
  console.log(
    `\nworst p99 of the goal shapes (limit 50): ${worst.toFixed(1)} ms (goal < 50 ms)   load average at end: ${loadavg()
      .map((l) => l.toFixed(1))
      .join(" ")}`,
  );
} finally {
  await pool.end();
  await sys.stop();
  await db.drop();
  await nats.stop();
}
