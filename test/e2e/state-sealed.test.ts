// A file written from a secret is sealed for operations that did not resolve it (docs/secrets.md),
// with real processes (auth, agents, secrets, state, gateway) and a real orch-agent: alice applies
// a file holding a secret; bob, who never names the secret, plans a module managing the same path.
// Neither bob's stored operation, what carol reads of it, the drift record nor any event holds the
// secret, also after the agent restarts. Needs `npm run build`.
import t from "tap";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { secretVariants } from "@orch/contracts";
import { ed25519, eventually } from "@orch/kit/testing";
import { startStateStack } from "./lib/state-stack.js";

const { linkPort, system, agents, dir, db, nats } = await startStateStack(t, { name: "sealed", keyByte: 5 });
const bus = await nats.connect("e2e-sealed");
const events: string[] = [];
const sub = bus.subscribe("audit.>", { callback: (_e, m) => void events.push(Buffer.from(m.data).toString("latin1")) });
t.teardown(async () => {
  sub.unsubscribe();
  await bus.close();
});
type Res = Awaited<ReturnType<typeof system.api>>;
const as = (tok: string) => (method: string, path: string, body?: unknown) =>
  system.api(method, `/api/v1${path}`, { token: tok, ...(body !== undefined ? { body } : {}) });
const admin = as(await system.login(system.admin));
const must = async (p: Promise<Res>, status: number) => {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r;
};

const server = `127.0.0.1:${linkPort}`;
let agent = agents.spawn(["--server", server]);
const web = await agent.nodeId();
const connected = () => eventually(async () => (await admin("GET", `/agents/${web}`)).body?.connected === true, 20_000);
await connected();
await must(admin("POST", `/agents/${web}`, { status: "approved", name: "web-1" }), 200);
await must(admin("PUT", `/agents/${web}/tags`, { tags: { role: "web" } }), 200);

const CANARY = "e2e-canary/Zq7 with&symbols";
await must(admin("POST", "/secrets", { name: "canary", value: CANARY, restriction: { node_ids: [web] } }), 201);
const operator = async (name: string, selector?: string) => {
  const key = ed25519();
  const body = {
    name,
    public_key: key.publicKeyHex,
    role: "operator",
    ...(selector ? { agent_selector: selector } : {}),
  };
  await must(admin("POST", "/operators", body), 201);
  return as(await system.login(key));
};
const alice = await operator("alice");
// bob is scoped to the web agents; he has no part in the secret.
const bob = await operator("bob", "role=web");
const carol = await operator("carol");

const FORMS = secretVariants(CANARY);
const leaks = (text: string) => FORMS.filter((f) => text.includes(f));
const path = join(dir, "app.conf");
const upload = (api: typeof admin, name: string, content: string) =>
  must(api("POST", "/modules", { name, content: [`name: ${name}`, "resources:", content, ""].join("\n") }), 201);

await upload(alice, "alice-app", `  - { id: conf, type: file, path: ${path}, content: "x={{ secrets.canary }}\\n" }`);
const applied = (await must(alice("POST", `/agents/${web}/apply?wait=60`, { modules: ["alice-app"] }), 200)).body;
if (applied.status !== "succeeded") throw new Error(JSON.stringify(applied));
await upload(bob, "bob-app", `  - { id: conf, type: file, path: ${path}, content: "x\\n" }`);

t.test("alice's file holds the secret, owner-only", async (t) => {
  t.equal(readFileSync(path, "utf8"), `x=${CANARY}\n`, "the test could fail: the value is on disk");
  t.equal(statSync(path).mode & 0o777, 0o600, "no mode in the module: 0600");
});

t.test("bob's plan of the same path shows sizes, not the secret, to anyone who reads it", async (t) => {
  const plan = await must(bob("POST", `/agents/${web}/plan?wait=60`, { modules: ["bob-app"] }), 200);
  t.equal(plan.body.status, "succeeded", plan.text);
  const r = plan.body.results[0];
  t.equal(r.changed, true, "it would change");
  t.equal(
    r.diff,
    `content ${Buffer.byteLength(`x=${CANARY}\n`)} bytes -> 2 bytes (not shown: the file holds content rendered from a secret)\n`,
  );
  const read = await must(carol("GET", `/state/operations/${plan.body.id}`), 200);
  const drift = await must(admin("POST", `/agents/${web}/drift?wait=60`), 200);
  const latest = await must(carol("GET", `/agents/${web}/drift/latest`), 200);
  for (const res of [plan, read, drift, latest]) t.same(leaks(res.text), [], `${res.text.slice(0, 40)}…: no form`);
});

t.test("nothing stored or sent as an event holds it", async (t) => {
  const client = new pg.Client({ connectionString: db.url });
  await client.connect();
  t.teardown(() => client.end());
  const rows = await client.query("SELECT row_to_json(o)::text AS j FROM state.operations o");
  const drift = await client.query("SELECT row_to_json(d)::text AS j FROM state.drift d");
  const believed = await client.query("SELECT row_to_json(b)::text AS j FROM state.believed b");
  const all = [...rows.rows, ...drift.rows, ...believed.rows].map((x) => x.j).join("\n");
  t.ok(rows.rows.length >= 3, "alice's apply, bob's plan and the drift check are stored");
  t.same(leaks(all), [], "state.operations, state.drift, state.believed");
  await eventually(() => events.length > 0, 10_000);
  t.same(leaks(events.join("\n")), [], `${events.length} events`);
});

t.test("after the agent restarts, the path is still sealed", async (t) => {
  await agent.signal("SIGTERM");
  await agent.exited;
  agent = agents.spawn(["--server", server], { dataDir: agent.dataDir });
  await connected();
  // (The state service seals it too, from alice's snapshot; agent/test/state-sealed.test.ts checks
  // the agent's memory alone.)
  await upload(bob, "bob-other", `  - { id: other, type: line, path: ${path}, line: "y=1" }`);
  const plan = await must(bob("POST", `/agents/${web}/plan?wait=60`, { modules: ["bob-other"] }), 200);
  t.equal(plan.body.status, "succeeded", plan.text);
  t.match(plan.body.results[0].diff, /not shown: the file holds content rendered from a secret/);
  t.same(leaks(plan.text), []);
  const sealed = JSON.parse(readFileSync(join(agent.dataDir, "sealed-paths.json"), "utf8"));
  t.same(sealed.paths, [path], "remembered in the agent's data directory");
});
