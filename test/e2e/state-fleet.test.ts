import t from "tap";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { eventually } from "@orch/kit/testing";
import { startStateStack } from "./lib/state-stack.js";

// State over a fleet of real orch-agent processes: a selector over 4 agents plus a
// matching offline one, a rolling apply that stops at the first failure, and a restricted secret
// that renders for one agent only and is stored nowhere. Needs `npm run build`.
const { db, linkPort, system, agents, dir: root } = await startStateStack(t, { name: "fleet", keyByte: 9 });
const sql = new pg.Client({ connectionString: db.url });
await sql.connect();
t.teardown(() => sql.end());
const token = await system.login(system.admin);
const api = (method: string, path: string, body?: unknown) =>
  system.api(method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
const must = async (p: ReturnType<typeof api>, status: number) => {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
};

/** Starts, approves and tags a real agent; `slot` keeps each agent's files apart on this one machine. */
async function enrol(name: string, tags: Record<string, string>) {
  const proc = agents.spawn(["--server", `127.0.0.1:${linkPort}`, "--no-terminal"]);
  const id = await proc.nodeId();
  await eventually(async () => (await api("GET", `/agents/${id}`)).body?.connected === true, 20_000);
  await must(api("POST", `/agents/${id}`, { status: "approved", name }), 200);
  await must(api("PUT", `/agents/${id}/tags`, { tags: { ...tags, slot: name } }), 200);
  return { id, proc };
}
const fleet = {
  web1: await enrol("web-1", { env: "test", role: "web" }),
  db1: await enrol("db-1", { env: "test", role: "db" }),
  web2: await enrol("web-2", { env: "prod", role: "web" }),
  cache1: await enrol("cache-1", { env: "test", role: "cache" }),
  dbOff: await enrol("db-off", { env: "test", role: "db" }),
};
await fleet.dbOff.proc.signal("SIGKILL");
await eventually(async () => (await api("GET", `/agents/${fleet.dbOff.id}`)).body?.connected === false, 30_000);

const marker = `${root}/{{ tags.slot }}.marker`;
await must(
  api("POST", "/modules", {
    name: "marker",
    content: `name: marker\nresources:\n  - { id: mark, type: file, path: '${marker}', content: '{{ tags.role }}' }\n`,
  }),
  201,
);

t.test(
  "`env=test,role in (web,db)` applies to exactly the matching agents; the offline match is unreachable",
  async (t) => {
    await must(
      api("POST", "/assignments", { name: "web-db", selector: "env=test,role in (web,db)", modules: ["marker"] }),
      201,
    );
    const r = await must(api("POST", "/assignments/web-db/apply?wait=60"), 200);
    t.equal(r.status, "completed");
    t.same(
      r.operations.map((o: any) => [o.name, o.status]),
      [
        ["db-1", "succeeded"],
        ["db-off", "unreachable"],
        ["web-1", "succeeded"],
      ],
    );
    t.equal(readFileSync(join(root, "web-1.marker"), "utf8"), "web");
    t.equal(readFileSync(join(root, "db-1.marker"), "utf8"), "db");
    t.notOk(existsSync(join(root, "web-2.marker")), "env=prod not matched");
    t.notOk(existsSync(join(root, "cache-1.marker")), "role=cache not matched");
    const off = await must(api("GET", `/state/operations/${r.operations[1].operation_id}`), 200);
    t.equal(off.error_code, "agent_unreachable");
  },
);

t.test("a rolling apply with batch 1 and max_failures 0 stops after the first failure", async (t) => {
  await must(
    api("POST", "/modules", {
      name: "flaky",
      content: "name: flaky\nresources:\n  - { id: check, type: exec, command: 'test {{ tags.role }} != cache' }\n",
    }),
    201,
  );
  await must(api("POST", "/assignments", { name: "all-test", selector: "env=test", modules: ["flaky"] }), 201);
  const r = await must(api("POST", "/assignments/all-test/apply?wait=60", { batch: 1, max_failures: 0 }), 200);
  t.equal(r.status, "stopped");
  t.same(
    r.operations.map((o: any) => [o.name, o.batch, o.status]),
    [
      ["cache-1", 1, "failed"],
      ["db-1", 2, "not_started"],
      ["db-off", 3, "not_started"],
      ["web-1", 4, "not_started"],
    ],
  );
  const ran = (await must(api("GET", "/state/operations?limit=500"), 200)).operations.filter(
    (o: any) => o.run_id === r.run_id,
  );
  t.equal(ran.length, 1, "no agent after the failure got an operation");
});

t.test(
  "a restricted secret renders for the allowed agent and fails with secret_not_permitted for another",
  async (t) => {
    const value = "e2e-S3CRET-value-9f8e7d";
    await must(api("POST", "/secrets", { name: "api_token", value, restriction: { node_ids: [fleet.web1.id] } }), 201);
    await must(
      api("POST", "/modules", {
        name: "token",
        content: `name: token\nresources:\n  - { id: conf, type: file, path: '${root}/{{ tags.slot }}.token', content: "token={{ secrets.api_token }}\\n" }\n  - { id: echo, type: exec, command: 'cat ${root}/{{ tags.slot }}.token', requires: [conf] }\n`,
      }),
      201,
    );

    const plan = await must(api("POST", "/agents/web-1/plan?wait=60", { modules: ["token"] }), 200);
    // Content rendered from a secret is sealed: sizes and attributes only, never a masked line.
    t.match(plan.results[0].diff, /content \(none\) -> \d+ bytes \(not shown: /, "the plan shows sizes only");
    t.notMatch(plan.results[0].diff, value, "the plan holds no value");
    const ok = await must(api("POST", "/agents/web-1/apply?wait=60", { modules: ["token"] }), 200);
    t.equal(ok.status, "succeeded");
    t.equal(readFileSync(join(root, "web-1.token"), "utf8"), `token=${value}\n`, "rendered for the allowed agent");
    const out = await must(api("GET", `/agents/web-1/state/operations/${ok.id}/output`), 200);
    t.equal(out.outputs[0].stdout, "token=***\n");

    const refused = await must(api("POST", "/agents/db-1/apply?wait=60", { modules: ["token"] }), 200);
    t.equal(refused.status, "failed");
    t.equal(refused.error_code, "secret_not_permitted");
    t.notOk(existsSync(join(root, "db-1.token")), "nothing written for the other agent");

    const tables = (
      await sql.query("SELECT table_name FROM information_schema.tables WHERE table_schema = 'state'")
    ).rows.map((r) => r.table_name as string);
    t.ok(tables.includes("operations") && tables.includes("snapshots") && tables.includes("drift"));
    let dump = "";
    for (const name of tables) dump += JSON.stringify((await sql.query(`SELECT * FROM state.${name}`)).rows);
    t.ok(dump.includes("token=***"), "the dump holds the masked results");
    t.notOk(dump.includes(value), "the value is in no stored operation, plan, output or snapshot");
    t.notOk(system.output().includes(value), "nor in any service log");
  },
);
