import t from "tap";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { ed25519 } from "@orch/kit/testing";
import { call, login } from "../../gateway/test/harness.js";
import { startStack } from "./harness.js";

// Values through the real gateway and state service on real NATS and Postgres: value sets and an
// agent's own values written and read, the merged result with every key's origin (set and line),
// refusals with stable codes and nothing stored, audit events, who may write, and the merged values
// reaching a version-2 module rendered on real agents (fan-out and single-agent apply).
const s = await startStack(t);
const dir = s.tempDir();
const prod = await s.addAgent({ name: "web-1", tags: { role: "web", env: "prod" } });
const staging = await s.addAgent({ name: "web-2", tags: { role: "web", env: "staging" } });

const PROD_YAML = "# production\nnginx:\n  upstreams:\n    - 10.0.0.1:80\n    - 10.0.0.2:80\n  workers: 8\n";

const setCount = async () => Number((await s.state.deps.pool.query("SELECT count(*) AS n FROM value_sets")).rows[0].n);

t.test("sets are created, read, listed by page and replaced", async (t) => {
  const d = await s.api("PUT", "/values/defaults", {
    values: { nginx: { upstreams: ["127.0.0.1:80"], workers: 2, log: "warn" }, site: "example" },
    description: "fleet-wide",
  });
  t.equal(d.status, 200, d.text);
  t.match(d.body, { name: "defaults", selector: null, priority: 0, key_count: 4, source: null });
  t.match(d.body.content, /workers: 2/, "JSON values are kept as YAML text");
  const p = await s.api("PUT", "/values/prod", { selector: "env=prod", priority: 10, content: PROD_YAML });
  t.equal(p.status, 200, p.text);
  t.match(p.body, { name: "prod", selector: "env=prod", priority: 10, content: PROD_YAML, key_count: 2 });
  t.match(p.body.updated_at, /^\d{4}-\d\d-\d\dT/);
  const w = await s.api("PUT", "/values/web", { selector: "role=web", priority: 5, content: "nginx:\n  workers: 4\n" });
  t.equal(w.status, 200, w.text);

  const page1 = await s.api("GET", "/values?limit=2");
  t.same(
    page1.body.sets.map((x: { name: string }) => x.name),
    ["defaults", "prod"],
  );
  t.equal(page1.body.has_more, true);
  t.notOk("content" in page1.body.sets[0], "lists carry no content");
  const page2 = await s.api("GET", `/values?limit=2&cursor=${page1.body.next_cursor}`);
  t.same(
    page2.body.sets.map((x: { name: string }) => x.name),
    ["web"],
  );
  const one = await s.api("GET", "/values/prod");
  t.same(one.body.values, { nginx: { upstreams: ["10.0.0.1:80", "10.0.0.2:80"], workers: 8 } });
  t.equal((await s.api("GET", "/values/nope")).body.code, "value_set_not_found");
  t.equal((await s.events("values.set_updated")).length, 3);
});

t.test("an agent's merged values name the set and line of every key and what each overrode", async (t) => {
  const own = await s.api("PUT", `/agents/web-1/values`, { content: "site: web-1.example\n" });
  t.equal(own.status, 200, own.text);
  const r = await s.api("GET", `/agents/${prod}/values`);
  t.equal(r.status, 200, r.text);
  t.same(r.body.values, {
    nginx: { upstreams: ["10.0.0.1:80", "10.0.0.2:80"], workers: 8, log: "warn" },
    site: "web-1.example",
  });
  t.same(r.body.sets, ["defaults", "web", "prod"]);
  const key = (path: string) => r.body.origins.find((o: { path: string }) => o.path === path);
  t.match(key("nginx.upstreams"), {
    value: ["10.0.0.1:80", "10.0.0.2:80"],
    origin: { set: "prod", layer: "set", priority: 10, line: 3 },
    overridden: [{ set: "defaults", layer: "defaults" }],
  });
  t.same(
    key("nginx.workers").overridden.map((o: { set: string }) => o.set),
    ["defaults", "web"],
  );
  t.match(key("site"), { origin: { set: null, layer: "agent", line: 1 }, overridden: [{ set: "defaults" }] });
  t.match(key("nginx.log"), { origin: { set: "defaults" }, overridden: [] });

  const other = await s.api("GET", "/agents/web-2/values");
  t.same(other.body.values.nginx, { upstreams: ["127.0.0.1:80"], workers: 4, log: "warn" });
  t.same(other.body.own, {});
  const cleared = await s.api("PUT", `/agents/web-1/values`, { values: {} });
  t.equal(cleared.body.values.site, "example", "{} clears the agent's own values");
  await s.api("PUT", `/agents/web-1/values`, { content: "site: web-1.example\n" });
  t.equal((await s.events("values.agent_updated")).length, 3);
  t.equal((await s.api("GET", "/agents/no-such-agent/values")).body.code, "agent_not_found");
});

t.test("bad input is a 4xx problem with a stable code and the line, and nothing is stored", async (t) => {
  const before = await setCount();
  const cases: Array<[string, unknown, number, string, number?]> = [
    [
      "leaky",
      { selector: "*", priority: 1, content: "db:\n  password: '{{ secrets.db }}'\n" },
      400,
      "secret_in_values",
      2,
    ],
    ["badkey", { selector: "*", priority: 1, content: "ok: 1\nbad.key: 2\n" }, 400, "invalid_values", 2],
    ["notmap", { selector: "*", priority: 1, content: "- a\n- b\n" }, 400, "invalid_values", 1],
    ["broken", { selector: "*", priority: 1, content: "a: [1,\n" }, 400, "invalid_values"],
    ["defaults", { selector: "role=web", values: { a: 1 } }, 400, "invalid_values"],
    ["nosel", { priority: 1, values: { a: 1 } }, 400, "invalid_values"],
    ["badsel", { selector: "role=", priority: 1, values: { a: 1 } }, 400, "invalid_selector"],
    ["both", { selector: "*", priority: 1, values: { a: 1 }, content: "a: 1\n" }, 400, "invalid_values"],
    ["huge", { selector: "*", priority: 1, content: `a: "${"x".repeat(300 * 1024)}"\n` }, 400, "values_too_large"],
    ["Bad_Name", { selector: "*", priority: 1, values: { a: 1 } }, 400, "invalid_request"],
  ];
  for (const [name, body, status, code, line] of cases) {
    const r = await s.api("PUT", `/values/${name}`, body);
    t.equal(r.status, status, `${name}: ${r.text.slice(0, 200)}`);
    t.equal(r.body.code, code, name);
    t.match(r.type, /application\/problem\+json/);
    if (line !== undefined) t.equal(r.body.line, line, `${name} line`);
  }
  const secretAgent = await s.api("PUT", "/agents/web-2/values", { values: { k: "{{secrets.x}}" } });
  t.equal(secretAgent.body.code, "secret_in_values");
  t.equal(await setCount(), before, "no set stored");
  t.same((await s.api("GET", "/agents/web-2/values")).body.own, {}, "no agent values stored");
});

t.test("who may write: any operator reads; a scoped operator may not change sets; no token is 401", async (t) => {
  const key = ed25519();
  const added = await s.api("POST", "/operators", {
    name: "webops",
    public_key: key.publicKeyHex,
    role: "operator",
    agent_selector: "role=web",
  });
  t.equal(added.status, 201, added.text);
  const scoped = await login(s.gw.url, key);
  const as = (method: string, path: string, body?: unknown) =>
    call(s.gw.url, method, `/api/v1${path}`, { token: scoped, ...(body !== undefined ? { body } : {}) });
  t.equal((await as("GET", "/values")).status, 200);
  t.equal((await as("GET", "/values/prod")).status, 200);
  const put = await as("PUT", "/values/scoped", { selector: "role=web", priority: 1, values: { a: 1 } });
  t.equal(put.status, 403);
  t.equal(put.body.code, "value_set_scoped_operator");
  const del = await as("DELETE", "/values/prod");
  t.equal(del.body.code, "value_set_scoped_operator");
  t.equal((await s.api("GET", "/values/scoped")).status, 404);

  const plainKey = ed25519();
  await s.api("POST", "/operators", { name: "bob", public_key: plainKey.publicKeyHex, role: "operator" });
  const bob = await login(s.gw.url, plainKey);
  const byBob = await call(s.gw.url, "PUT", "/api/v1/values/bobs", {
    token: bob,
    body: { selector: "role=db", priority: 3, values: { a: 1 } },
  });
  t.equal(byBob.status, 200, byBob.text);
  t.equal(byBob.body.updated_by_name, "bob");
  t.equal((await call(s.gw.url, "DELETE", "/api/v1/values/bobs", { token: bob })).status, 204);
  t.equal((await s.api("GET", "/values/bobs")).status, 404);
  t.equal((await s.events("values.set_deleted")).length, 1);
  t.equal((await call(s.gw.url, "GET", "/api/v1/values")).status, 401);
});

t.test("a version-2 module renders each agent's merged values (fan-out and single apply)", async (t) => {
  const content = [
    "version: 2",
    "name: site",
    "resources:",
    "  - id: conf",
    "    type: file",
    `    path: "${dir}/{{ agent.name }}.conf"`,
    "    content: |",
    "      {% for u in values.nginx.upstreams %}upstream {{ u }};",
    "      {% endfor %}workers {{ values.nginx.workers }} site {{ values.site }}",
    "",
  ].join("\n");
  const up = await s.api("POST", "/modules", { name: "site", content });
  t.equal(up.status, 201, up.text);
  const a = await s.api("POST", "/assignments", { name: "site", selector: "role=web", modules: ["site"] });
  t.equal(a.status, 201, a.text);
  const run = await s.api("POST", "/assignments/site/apply?wait=60");
  t.equal(run.status, 200, run.text);
  t.equal(run.body.status, "completed", JSON.stringify(run.body));
  t.equal(
    readFileSync(join(dir, "web-1.conf"), "utf8"),
    "upstream 10.0.0.1:80;\nupstream 10.0.0.2:80;\nworkers 8 site web-1.example\n",
  );
  t.equal(readFileSync(join(dir, "web-2.conf"), "utf8"), "upstream 127.0.0.1:80;\nworkers 4 site example\n");

  await s.api("PUT", "/agents/web-2/values", { content: "nginx:\n  workers: 16\n" });
  const one = await s.api("POST", `/agents/${staging}/apply?wait=60`, { modules: ["site"] });
  t.equal(one.body.status, "succeeded", one.text);
  t.equal(readFileSync(join(dir, "web-2.conf"), "utf8"), "upstream 127.0.0.1:80;\nworkers 16 site example\n");
});
