import t from "tap";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ServerResponse } from "node:http";
import { agentRecord, serveAgents } from "./helpers/agents.js";
import { cli } from "./helpers/cli.js";
import { loggedIn, type World } from "./helpers/setup.js";

// orchctl values against the in-test API: `explain` and `agent` print the winning value, its
// origin (set, line) and what it overrode, agents named the usual three ways; `set` sends the
// file's YAML text and keeps the selector and priority a replacement leaves out; --json is the
// API's document.

const NODE = "0123456789abcdef0123456789abcdef";
const merged = {
  node_id: NODE,
  name: "web-1",
  values: { nginx: { upstreams: ["10.0.0.1:80"], workers: 8 }, site: "web-1.example" },
  origins: [
    {
      path: "nginx.upstreams",
      value: ["10.0.0.1:80"],
      origin: { set: "prod", layer: "set", priority: 10, line: 3, path: "nginx.upstreams" },
      overridden: [
        { set: "defaults", layer: "defaults", priority: 0, line: 2, path: "nginx.upstreams" },
        { set: "web", layer: "set", priority: 5, line: 4, path: "nginx.upstreams" },
      ],
    },
    {
      path: "nginx.workers",
      value: 8,
      origin: { set: "prod", layer: "set", priority: 10, line: 6, path: "nginx.workers" },
      overridden: [],
    },
    {
      path: "site",
      value: "web-1.example",
      origin: { set: null, layer: "agent", priority: 0, line: 1, path: "site" },
      overridden: [{ set: "defaults", layer: "defaults", priority: 0, line: 5, path: "site" }],
    },
  ],
  sets: ["defaults", "web", "prod"],
  own: { site: "web-1.example" },
  own_content: "site: web-1.example\n",
};

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};

function serveValues(w: World) {
  serveAgents(w, [agentRecord({ node_id: NODE, name: "web-1" })]);
  w.server.overrides.set(`GET /api/v1/agents/${NODE}/values`, (_req, res) => json(res, 200, merged));
}

t.test("explain prints the winning value, its set and line, and each set it overrode", async (t) => {
  const w = await loggedIn(t);
  serveValues(w);
  const r = await cli(["values", "explain", "web-1", "nginx.upstreams"], w.env);
  t.equal(r.code, 0, r.stderr);
  t.equal(
    r.stdout,
    [
      'nginx.upstreams = ["10.0.0.1:80"]',
      "  from: prod (priority 10), line 3",
      "  overrode:",
      "    defaults, line 2",
      "    web (priority 5), line 4",
      "",
    ].join("\n"),
  );
  const own = await cli(["values", "explain", NODE, "site"], w.env);
  t.match(own.stdout, /site = "web-1.example"\n {2}from: agent's own values, line 1\n/);
  const parent = await cli(["values", "explain", "web-1", "nginx"], w.env);
  t.match(
    parent.stdout,
    /nginx.upstreams = .*\n[\s\S]*nginx.workers = 8\n {2}from: prod \(priority 10\), line 6\n {2}overrode: nothing/,
  );
  const under = await cli(["values", "explain", "web-1", "nginx.upstreams.first"], w.env);
  t.match(under.stdout, /^nginx.upstreams = /, "a path inside a list is answered by the list");

  const missing = await cli(["values", "explain", "web-1", "nope"], w.env);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /no value at nope for web-1 .*\(value_not_found\)/);

  const j = await cli(["--json", "values", "explain", "web-1", "nginx.upstreams"], w.env);
  t.match(JSON.parse(j.stdout), {
    node_id: NODE,
    path: "nginx.upstreams",
    keys: [{ origin: { set: "prod", line: 3 } }],
  });
});

t.test("agent prints every key with its origin; --json is the API's document", async (t) => {
  const w = await loggedIn(t);
  serveValues(w);
  const r = await cli(["values", "agent", "web-1"], w.env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /^KEY\s+VALUE\s+FROM\s+OVERRODE/);
  t.match(r.stdout, /nginx.upstreams\s+\["10.0.0.1:80"\]\s+prod \(priority 10\), line 3\s+defaults, web/);
  t.match(r.stderr, /defaults → web → prod → agent's own values/);
  const j = await cli(["--json", "values", "agent", "web-1"], w.env);
  t.same(JSON.parse(j.stdout), merged);
});

t.test("set sends the file's YAML and keeps the selector and priority it leaves out", async (t) => {
  const w = await loggedIn(t);
  const file = join(w.env.HOME, "prod.yaml");
  await writeFile(file, "nginx:\n  workers: 9\n");
  const stored = {
    name: "prod",
    selector: "env=prod",
    priority: 10,
    description: "production",
    key_count: 1,
    sha256: "ab",
    updated_at: "2026-01-01T00:00:00.000Z",
    updated_by: "op",
    updated_by_name: "alice",
    source: null,
    commit: null,
    values: { nginx: { workers: 8 } },
    content: "nginx:\n  workers: 8\n",
  };
  w.server.overrides.set("GET /api/v1/values/prod", (_req, res) => json(res, 200, stored));
  w.server.overrides.set("PUT /api/v1/values/prod", (_req, res) => json(res, 200, stored));
  const r = await cli(["values", "set", "prod", "-f", file], w.env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /Replaced value set prod/);
  const sent = w.server.requests.filter((q) => q.method === "PUT").map((q) => q.body);
  t.same(sent, [{ content: "nginx:\n  workers: 9\n", selector: "env=prod", priority: 10, description: "production" }]);
  const bad = await cli(["values", "set", "prod", "-f", file, "--priority", "high"], w.env);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /--priority must be an integer/);
});
