import t from "tap";
import type { ServerResponse } from "node:http";
import { Readable } from "node:stream";
import { run } from "../src/program.js";
import { shortId } from "../src/format/agents.js";
import { agentRecord, serveAgents } from "./helpers/agents.js";
import { cli, type CliResult } from "./helpers/cli.js";
import { runCounts } from "./helpers/run-counts.js";
import { loggedIn, type World } from "./helpers/setup.js";

// Every command that takes an agent accepts the same three forms — the name, the full node id and
// the short id `agents list` prints — and acts on the same agent: the request it sends names the
// agent by its full node id, whichever form was typed. The in-test API answers GET /agents/{ref}
// for a name or a node id only (as the gateway does), so a short id must be resolved by orchctl.

const NODE = "35c02ced9bb7a1f0e4d2c6b8a9f01234";
const agent = agentRecord({ name: "web-1", node_id: NODE });
const FORMS = { name: "web-1", "node id": NODE, "short id": shortId(NODE) } as const;

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};

const operation = (kind: string) => ({
  id: "op-1",
  kind,
  node_id: NODE,
  node_name: "web-1",
  status: "succeeded",
  error_code: null,
  error: null,
  modules: ["web"],
  summary: { ok: 1, changed: 0, failed: 0, skipped: 0, unsupported: 0 },
  results: [],
  created_at: "2025-06-01T12:00:00.000Z",
});
const driftRecord = {
  id: "d-1",
  operation_id: "op-1",
  node_id: NODE,
  checked_at: "2025-06-01T12:00:00.000Z",
  drifted: false,
  resources: [],
};
const finishedRun = {
  id: "01JRUN0000000000000000000A",
  status: "completed",
  selector: null,
  node_ids: [NODE],
  command: ["true"],
  script: null,
  env_keys: [],
  timeout_s: 300,
  batch: null,
  batch_size: 1,
  batches: 1,
  max_failures: null,
  targets: 1,
  counts: runCounts({ succeeded: 1 }),
  maintenance_window: null,
  started_by: { id: "op", name: "alice" },
  cancelled_by: null,
  created_at: "2026-01-01T00:00:00.000Z",
  finished_at: "2026-01-01T00:00:01.000Z",
  agents: [],
};
const page = (key: string) => ({ [key]: [], has_more: false, next_cursor: null });

/** What the server answers for the agent, always under its full node id. */
function serveAgentRoutes(w: Pick<World, "server">): void {
  const on = (route: string, body: unknown, status = 200) =>
    w.server.overrides.set(route, (_req, res) => json(res, status, body));
  on(`POST /api/v1/agents/${NODE}`, agent);
  w.server.overrides.set(`DELETE /api/v1/agents/${NODE}`, (_req, res) => {
    res.writeHead(204);
    res.end();
  });
  on(`PUT /api/v1/agents/${NODE}/tags/role`, { ...agent, tags: { role: "web" } });
  on(`DELETE /api/v1/agents/${NODE}/tags/role`, agent);
  on(`GET /api/v1/agents/${NODE}/attributes`, { attributes: { os: "linux" } });
  on(`GET /api/v1/agents/${NODE}/metrics`, { samples: [] });
  on(`POST /api/v1/agents/${NODE}/upgrade`, { upgrades: [], version: "0.2.0", skipped: 1 }, 202);
  on("GET /api/v1/agent-upgrades", page("upgrades"));
  on(`POST /api/v1/terminal/${NODE}`, { session_id: "s-1", ws_url: "ws://127.0.0.1:1/attach" }, 201);
  on(`POST /api/v1/agents/${NODE}/apply`, operation("apply"), 202);
  on(`POST /api/v1/agents/${NODE}/plan`, operation("plan"), 202);
  on(`POST /api/v1/agents/${NODE}/drift`, { operation: operation("drift") }, 202);
  on(`GET /api/v1/agents/${NODE}/drift/latest`, driftRecord);
  on(`GET /api/v1/agents/${NODE}/state`, { node_id: NODE, resources: [] });
  on("GET /api/v1/state/operations", page("operations"));
  on("GET /api/v1/audit", page("events"));
  on("POST /api/v1/runs", finishedRun, 201);
  on(
    "POST /api/v1/secrets",
    {
      name: "db",
      description: null,
      expires_at: null,
      restriction: { node_ids: [NODE], tags: {} },
      created_at: "2025-06-01T12:00:00.000Z",
      created_by: null,
      updated_at: "2025-06-01T12:00:00.000Z",
      updated_by: null,
    },
    201,
  );
}

/** `secrets set` reads the value from stdin, which the in-process runner hands it like this. */
async function withStdin(args: string[], env: World["env"], value: string): Promise<CliResult> {
  let stdout = "";
  let stderr = "";
  const io = {
    stdout: { write: (s: string) => (stdout += s) },
    stderr: { write: (s: string) => (stderr += s) },
    env,
    stdin: Readable.from([Buffer.from(value)]),
  };
  const code = await run(args, io);
  return { code, stdout, stderr };
}

type Req = World["server"]["requests"][number];
/** One command taking an agent: how to run it with `ref`, and the request that shows which agent it acted on. */
interface Case {
  args: (ref: string) => string[];
  /** The request naming the agent by node id; `agents show` sends none beyond the lookup, so its output shows it. */
  sent?: (r: Req) => boolean;
  stdout?: RegExp;
  stdin?: string;
}

const path = (method: string, p: string) => (r: Req) => r.method === method && r.path === p;
const query = (p: string, key: string) => (r: Req) => r.method === "GET" && r.path === p && r.query.get(key) === NODE;
const body = (p: string, has: (b: Record<string, unknown>) => boolean) => (r: Req) =>
  r.method === "POST" && r.path === p && has((r.body ?? {}) as Record<string, unknown>);

const CASES: Record<string, Case> = {
  "agents show": { args: (a) => ["agents", "show", a], stdout: new RegExp(`^node_id:\\s+${NODE}$`, "m") },
  "agents approve": {
    args: (a) => ["agents", "approve", a, "--name", "web-1"],
    sent: body(`/api/v1/agents/${NODE}`, (b) => b.status === "approved"),
  },
  "agents reject": {
    args: (a) => ["agents", "reject", a],
    sent: body(`/api/v1/agents/${NODE}`, (b) => b.status === "rejected"),
  },
  "agents rm": { args: (a) => ["agents", "rm", a], sent: path("DELETE", `/api/v1/agents/${NODE}`) },
  "agents tag": {
    args: (a) => ["agents", "tag", a, "role=web"],
    sent: path("PUT", `/api/v1/agents/${NODE}/tags/role`),
  },
  "agents untag": {
    args: (a) => ["agents", "untag", a, "role"],
    sent: path("DELETE", `/api/v1/agents/${NODE}/tags/role`),
  },
  "agents attrs": { args: (a) => ["agents", "attrs", a], sent: path("GET", `/api/v1/agents/${NODE}/attributes`) },
  "agents metrics": { args: (a) => ["agents", "metrics", a], sent: path("GET", `/api/v1/agents/${NODE}/metrics`) },
  "agents upgrade": { args: (a) => ["agents", "upgrade", a], sent: path("POST", `/api/v1/agents/${NODE}/upgrade`) },
  "agents upgrades --agent": {
    args: (a) => ["agents", "upgrades", "--agent", a],
    sent: query("/api/v1/agent-upgrades", "node_id"),
  },
  ssh: { args: (a) => ["ssh", a, "--json"], sent: path("POST", `/api/v1/terminal/${NODE}`) },
  apply: { args: (a) => ["apply", a, "-m", "web"], sent: path("POST", `/api/v1/agents/${NODE}/apply`) },
  plan: { args: (a) => ["plan", a, "-m", "web"], sent: path("POST", `/api/v1/agents/${NODE}/plan`) },
  drift: { args: (a) => ["drift", a], sent: path("GET", `/api/v1/agents/${NODE}/drift/latest`) },
  "drift --check": { args: (a) => ["drift", a, "--check"], sent: path("POST", `/api/v1/agents/${NODE}/drift`) },
  state: { args: (a) => ["state", a], sent: path("GET", `/api/v1/agents/${NODE}/state`) },
  "ops list --agent": {
    args: (a) => ["ops", "list", "--agent", a],
    sent: query("/api/v1/state/operations", "node_id"),
  },
  "audit --agent": { args: (a) => ["audit", "--agent", a], sent: query("/api/v1/audit", "agent") },
  "run --node": {
    args: (a) => ["run", "--node", a, "--", "true"],
    sent: body("/api/v1/runs", (b) => JSON.stringify(b.node_ids) === JSON.stringify([NODE])),
  },
  "secrets set --node": {
    args: (a) => ["secrets", "set", "db", "--node", a],
    sent: body(
      "/api/v1/secrets",
      (b) => JSON.stringify(b.restriction) === JSON.stringify({ node_ids: [NODE], tags: {} }),
    ),
    stdin: "s3cret",
  },
};

t.test("every command that takes an agent accepts its name, node id and short id", async (t) => {
  const w = await loggedIn(t);
  serveAgents(w, [agent]);
  serveAgentRoutes(w);
  for (const [command, c] of Object.entries(CASES))
    for (const [form, ref] of Object.entries(FORMS)) {
      const before = w.server.requests.length;
      const args = c.args(ref);
      const r = c.stdin === undefined ? await cli(args, w.env) : await withStdin(args, w.env, c.stdin);
      t.equal(r.code, 0, `${command} with the ${form}: ${r.stderr}`);
      if (c.sent) t.ok(w.server.requests.slice(before).some(c.sent), `${command} with the ${form} acted on ${NODE}`);
      if (c.stdout) t.match(r.stdout, c.stdout, `${command} with the ${form} shows ${NODE}`);
    }
});

t.test("a short id two agents share is refused, naming both; an unknown one is agent_not_found", async (t) => {
  const w = await loggedIn(t);
  serveAgents(w, [agent, agentRecord({ name: "web-2", node_id: "35c02ced9bb7ffffffffffffffffffff" })]);
  w.server.overrides.set("GET /api/v1/agents/35c02ced", (_req, res) =>
    json(res, 404, {
      type: "about:blank",
      title: "not found",
      status: 404,
      detail: "no agent",
      code: "agent_not_found",
    }),
  );
  const ambiguous = await cli(["ssh", "35c02ced"], w.env);
  t.equal(ambiguous.code, 1);
  t.match(
    ambiguous.stderr,
    /35c02ced matches 2 agents: web-1 \(35c02ced9bb7a1f0\S+\), web-2 \(35c02ced9bb7ffff\S+\); give more of the id \(ambiguous_agent\)/,
  );
  const unknown = await cli(["state", "nosuch"], w.env);
  t.equal(unknown.code, 1);
  t.match(unknown.stderr, /\(not_found\)|\(agent_not_found\)/);
});
