import t from "tap";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, eventually, freePort, startNats, startSystem } from "@orch/kit/testing";
import { agentPool } from "../../services/agents/test/harness.js";

// Enforcement end to end with real processes (auth, agents, secrets, notify, audit, state, gateway)
// and a real orch-agent: a hand edit on an enforced assignment's agent is corrected by the next
// scheduled drift check without a person; inside a maintenance window it is detected (manual check)
// but not corrected until the window is gone. Needs `npm run build` (dist/ of services and agent/).
const DRIFT_INTERVAL_S = 2;
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const linkPort = await freePort();
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "agents", "secrets", "notify", "audit", "state", "gateway"],
  env: {
    ORCH_AGENTS_LINK_HOST: "127.0.0.1",
    ORCH_AGENTS_LINK_PORT: String(linkPort),
    ORCH_SECRETS_KEYS: `k1:${Buffer.alloc(32, 16).toString("base64")}`,
    ORCH_NOTIFY_CREDENTIALS_KEYS: `k1:${Buffer.alloc(32, 17).toString("base64")}`,
    ORCH_STATE_DRIFT_INTERVAL_SECONDS: String(DRIFT_INTERVAL_S),
    // The rate limit has its own test (services/state/test/enforce-remediate.test.ts); here it must
    // not hold back the correction after the window.
    ORCH_STATE_ENFORCE_INTERVAL_SECONDS: "1",
  },
});
const agents = agentPool();
const root = mkdtempSync(join(tmpdir(), "orch-e2e-enforce-"));
t.teardown(() => rmSync(root, { recursive: true, force: true }));
t.teardown(async () => {
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

const agent = agents.spawn(["--server", `127.0.0.1:${linkPort}`]);
const web = await agent.nodeId();
await eventually(async () => (await api("GET", `/agents/${web}`)).body?.connected === true, 20_000);
await must(api("POST", `/agents/${web}`, { status: "approved", name: "web-1" }), 200);
await must(api("PUT", `/agents/${web}/tags`, { tags: { role: "web" } }), 200);

const conf = join(root, "app.conf");
const log = join(root, "runs.log");
await must(
  api("POST", "/modules", {
    name: "site",
    content: [
      "name: site",
      "resources:",
      `  - { id: dir, type: directory, path: '${root}' }`,
      `  - { id: conf, type: file, path: '${conf}', content: "managed\\n", requires: [dir] }`,
      `  - { id: counter, type: exec, command: 'echo run >> ${log}', requires: [dir] }`,
      "",
    ].join("\n"),
  }),
  201,
);

const enforcementApplies = async () =>
  ((await must(api("GET", `/agents/${web}/state/operations?kind=apply&limit=100`), 200)).operations as any[]).filter(
    (o) => o.actor.id === "system:enforce",
  );
const audit = async (type: string) =>
  (await must(api("GET", `/audit?event_type=${type}&limit=100`), 200)).events as any[];

t.test("an enforced assignment, applied by a fan-out", async (t) => {
  const asg = await must(
    api("POST", "/assignments", { name: "web", selector: "role=web", modules: ["site"], enforce: true }),
    201,
  );
  t.equal(asg.enforce, true);
  const run = await must(api("POST", "/assignments/web/apply?wait=60"), 200);
  t.equal(run.status, "completed");
  t.equal(readFileSync(conf, "utf8"), "managed\n");
  t.equal(readFileSync(log, "utf8"), "run\n");
});

t.test("a hand edit is corrected by the next scheduled check without a person", async (t) => {
  writeFileSync(conf, "hacked\n");
  await eventually(() => readFileSync(conf, "utf8") === "managed\n", 30_000);
  // The file is restored before the operation's end is recorded: wait for its final status.
  const [op] = await eventually(async () => {
    const ops = await enforcementApplies();
    return ops[0] && ops[0].status !== "pending" && ops[0].status !== "running" ? ops : undefined;
  }, 30_000);
  t.equal(op.status, "succeeded");
  t.equal(op.assignment, "web");
  t.ok(op.remediates, "the operation names the drift record it corrects");
  const drift = await must(api("GET", `/drift/${op.remediates}`), 200);
  t.equal(drift.drifted, true);
  t.same(
    drift.resources.map((r: any) => r.id),
    ["conf"],
  );
  t.equal(readFileSync(log, "utf8"), "run\n", "only the drifted resource was applied: the exec did not run again");
  const remediated = await eventually(async () =>
    (await audit("drift.remediated")).find((e) => e.metadata.operation_id === op.id),
  );
  t.equal(remediated.actor.id, "system:enforce");
  t.equal(remediated.metadata.drift_id, op.remediates);
  t.equal(remediated.metadata.assignment, "web");
  t.same(remediated.metadata.resources, ["site/conf"]);
});

t.test("inside a maintenance window the edit is detected, not corrected; after it, corrected", async (t) => {
  const now = Math.floor(Date.now() / 1000);
  const win = await must(
    api("POST", "/maintenance-windows", { starts_at: now - 5, ends_at: now + 3600, reason: "enforce e2e" }),
    201,
  );
  const before = (await enforcementApplies()).length;
  writeFileSync(conf, "hacked in window\n");
  const manual = await must(api("POST", `/agents/${web}/drift?wait=30`), 200);
  t.equal(manual.drift.drifted, true, "a manual check detects the edit");

  // Several scheduled intervals pass (the scheduler is paused, and a manual check never corrects).
  const until = Date.now() + 3 * DRIFT_INTERVAL_S * 1000 + 500;
  const seen = new Set<string>();
  while (Date.now() < until) {
    seen.add(readFileSync(conf, "utf8"));
    await new Promise((r) => setTimeout(r, 250));
  }
  seen.add(readFileSync(conf, "utf8"));
  t.same([...seen], ["hacked in window\n"], "not corrected at any time during the window");
  t.equal((await enforcementApplies()).length, before, "no enforcement apply during the window");

  await must(api("DELETE", `/maintenance-windows/${win.id}`), 204);
  await eventually(() => readFileSync(conf, "utf8") === "managed\n", 30_000);
  t.equal((await enforcementApplies()).length, before + 1, "corrected once the window is gone");
});
