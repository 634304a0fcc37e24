// The live run stream end to end, under the production bus permissions (deploy/nats/local.conf,
// every service its own NATS user): real orch-agents apply a gated module; the stream shows the
// snapshot and each agent finishing (state → orch.state.runs.<id> → gateway); the gateway is
// killed mid-apply, the run finishes while it is down, and a reconnecting client gets the true
// final state and `end`. The NATS server's own log proves nobody hit a permission violation.
// Needs services/*/dist and agent/dist (npm run build).
import t from "tap";
import pg from "pg";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { randomBytes } from "node:crypto";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { createTestDatabase, eventually, freePort, startNats, startSystem } from "@orch/kit/testing";
import { devPassword } from "../../deploy/nats/generate.mjs";
import { agentPool } from "../../services/agents/test/harness.js";
import { openSse, type SseStream } from "../../services/audit/test/sse.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const work = mkdtempSync(join(tmpdir(), "orch-e2e-runstream-"));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
const serverLog = join(work, "nats.log");
const serverConf = join(work, "server.conf");
writeFileSync(
  serverConf,
  `include "${relative(work, join(ROOT, "deploy/nats/local.conf"))}"\nlog_file: "${serverLog}"\n`,
);
const nats = await startNats({ configFile: serverConf, owner: t });
const db = await createTestDatabase({ owner: t });
const linkPort = await freePort();
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "agents", "secrets", "state", "gateway"],
  env: {
    ORCH_AGENTS_LINK_HOST: "127.0.0.1",
    ORCH_AGENTS_LINK_PORT: String(linkPort),
    ORCH_SECRETS_KEYS: `k1:${randomBytes(32).toString("base64")}`,
    ORCH_STATE_DRIFT_INTERVAL_SECONDS: "0",
  },
  serviceEnv: (name) => ({ ORCH_NATS_USER: name, ORCH_NATS_PASSWORD: devPassword(name) }),
});
const agents = agentPool();
// Reads the run while the gateway is down.
const reader = new pg.Pool({ connectionString: db.url, max: 1 });
const streams: SseStream[] = [];
t.teardown(async () => {
  for (const s of streams) s.close();
  await reader.end();
  await agents.stop();
});

const token = await system.login(system.admin);
const api = (method: string, path: string, body?: unknown) =>
  system.api(method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
const must = async (p: ReturnType<typeof api>, status: number) => {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
};

for (const slot of ["w1", "w2"]) {
  const nodeId = await agents.spawn(["--server", `127.0.0.1:${linkPort}`, "--no-terminal"]).nodeId();
  await eventually(async () => (await api("GET", `/agents/${nodeId}`)).body?.connected === true, 20_000);
  await must(api("POST", `/agents/${nodeId}`, { status: "approved", name: `web-${slot}` }), 200);
  await must(api("PUT", `/agents/${nodeId}/tags`, { tags: { role: "web", slot } }), 200);
}
// Each agent's apply waits for its own gate file, so the test decides when each one finishes.
const gate = (slot: string) => join(work, `${slot}.go`);
await must(
  api("POST", "/modules", {
    name: "gated",
    content: [
      "name: gated",
      "resources:",
      `  - { id: mark, type: file, path: '${work}/{{ tags.slot }}.mark', content: 'slot {{ tags.slot }}' }`,
      `  - { id: wait, type: exec, command: 'while [ ! -e ${work}/{{ tags.slot }}.go ]; do sleep 0.1; done', requires: [mark] }`,
      "",
    ].join("\n"),
  }),
  201,
);
await must(api("POST", "/assignments", { name: "web", selector: "role=web", modules: ["gated"] }), 201);

const stream = async (runId: string) => {
  const s = await openSse(`${system.url}/api/v1/assignments/web/runs/${runId}/stream`, { token });
  streams.push(s);
  if (s.status !== 200) throw new Error(`stream: ${s.status} ${JSON.stringify(s.body)}`);
  return s;
};
const runs = (s: SseStream) => s.events.filter((e) => e.event === "run").map((e) => e.data);
const statusOf = (run: any, name: string) => run.operations.find((o: any) => o.name === name)?.status;

t.test("snapshot, live updates, a gateway restart mid-apply, then the true final state", async (t) => {
  const started = await must(api("POST", "/assignments/web/apply"), 202);
  const first = await stream(started.run_id);
  const [snapshot] = await first.waitFor(1);
  t.equal(snapshot!.event, "run");
  t.equal(snapshot!.data.status, "running");

  writeFileSync(gate("w1"), "");
  const update = await eventually(
    () => runs(first).find((r) => statusOf(r, "web-w1") === "succeeded" && statusOf(r, "web-w2") === "running"),
    30_000,
  );
  t.equal(update.status, "running", "web-w1 finished while web-w2 still runs");

  await system.kill("gateway", "SIGKILL");
  await first.ended;
  t.notOk(
    first.events.some((e) => e.event === "end"),
    "the first stream was cut, not ended",
  );
  writeFileSync(gate("w2"), "");
  await eventually(async () => {
    const r = await reader.query("SELECT status FROM state.runs WHERE id = $1", [started.run_id]);
    return r?.rows[0]?.status === "completed";
  }, 30_000);

  await system.start("gateway");
  await eventually(
    async () => (await system.api("GET", "/api/v1/status").catch(() => undefined))?.status === 200,
    30_000,
  );
  const again = await stream(started.run_id);
  await again.ended;
  t.same(
    again.events.map((e) => e.event),
    ["run", "end"],
  );
  const final = again.events[0]!.data;
  t.equal(final.status, "completed");
  t.same(
    final.operations.map((o: any) => [o.name, o.status]),
    [
      ["web-w1", "succeeded"],
      ["web-w2", "succeeded"],
    ],
  );
  t.same(again.events[1]!.data, { status: "completed" });
  t.equal(readFileSync(join(work, "w2.mark"), "utf8"), "slot w2", "the apply really ran");

  const ops = await must(api("GET", `/assignments/web/runs/${started.run_id}/operations`), 200);
  t.same(
    ops.operations.map((o: any) => o.results.map((r: any) => [r.id, r.status])),
    [
      [
        ["mark", "changed"],
        ["wait", "changed"],
      ],
      [
        ["mark", "changed"],
        ["wait", "changed"],
      ],
    ],
  );
});

t.test("no service hit a bus permission violation", async (t) => {
  const log = existsSync(serverLog) ? readFileSync(serverLog, "utf8") : "";
  t.same(
    log.split("\n").filter((l) => /Violation/i.test(l)),
    [],
  );
});
