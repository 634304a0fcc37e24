import t from "tap";
import type { ServerResponse } from "node:http";
import { UPGRADE_COLUMNS, upgradeRows, versionCell } from "../src/format/agent-upgrades.js";
import { cli } from "./helpers/cli.js";
import { loggedIn, type World } from "./helpers/setup.js";

// orchctl agents upgrade / upgrades against the in-test API: the requests sent, the table, --json.

const NODE = "0123456789abcdef0123456789abcdef";
const upgrade = (o: Record<string, unknown> = {}) => ({
  id: "01JQ0000000000000000000001",
  node_id: NODE,
  name: "web-1",
  from_version: "0.1.0",
  to_version: "0.2.0",
  status: "requested",
  reason: null,
  message: null,
  requested_at: new Date().toISOString(),
  deadline_at: new Date(Date.now() + 180_000).toISOString(),
  finished_at: null,
  requested_by: "01J0000000000000000000000A",
  ...o,
});
const agent = {
  node_id: NODE,
  public_key: "ab".repeat(32),
  pending_reason: null,
  name: "web-1",
  status: "approved",
  tags: {},
  attributes: {},
  connected: true,
  first_seen: null,
  last_seen: null,
  address: null,
  version: "0.1.0",
  outdated: true,
};
const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};
const sent = (w: World, method: string, path: string) =>
  w.server.requests.filter((r) => r.method === method && r.path === path);

t.test("unit: rows and the version cell", async (t) => {
  t.same(UPGRADE_COLUMNS, ["ID", "AGENT", "FROM", "TO", "STATUS", "REASON", "REQUESTED"]);
  const [row] = upgradeRows([upgrade({ status: "failed", reason: "checksum_mismatch" }) as never], Date.now());
  t.same(row!.slice(0, 6), ["01JQ0000000000000000000001", "web-1", "0.1.0", "0.2.0", "failed", "checksum_mismatch"]);
  t.equal(versionCell({ version: "0.1.0", outdated: true }), "0.1.0*");
  t.equal(versionCell({ version: "0.2.0", outdated: false }), "0.2.0");
  t.equal(versionCell({ version: null }), "-");
});

t.test("upgrade <agent> --to: resolves the agent, posts the version, prints the table", async (t) => {
  const w = await loggedIn(t);
  w.server.overrides.set(`GET /api/v1/agents/web-1`, (_q, res) => json(res, 200, agent));
  w.server.overrides.set(`POST /api/v1/agents/${NODE}/upgrade`, (_q, res) =>
    json(res, 202, { upgrades: [upgrade()], version: "0.2.0", skipped: 0 }),
  );
  const r = await cli(["agents", "upgrade", "web-1", "--to", "0.2.0"], w.env);
  t.equal(r.code, 0, r.stderr);
  t.same(
    sent(w, "POST", `/api/v1/agents/${NODE}/upgrade`).map((q) => q.body),
    [{ version: "0.2.0" }],
  );
  t.match(r.stdout, /Upgrading 1 agent to orch-agent 0\.2\.0/);
  t.match(r.stdout, /web-1\s+0\.1\.0\s+0\.2\.0\s+requested/);
  t.match(r.stderr, /orchctl agents upgrades/);
});

t.test("upgrade --selector: posts the selector (no version = the newest); --json", async (t) => {
  const w = await loggedIn(t);
  w.server.overrides.set("POST /api/v1/agent-upgrades", (_q, res) =>
    json(res, 202, {
      upgrades: [upgrade({ status: "failed", reason: "agent_unreachable" })],
      version: "0.2.0",
      skipped: 2,
    }),
  );
  const r = await cli(["agents", "upgrade", "--selector", "env=prod", "--json"], w.env);
  t.equal(r.code, 0, r.stderr);
  t.same(
    sent(w, "POST", "/api/v1/agent-upgrades").map((q) => q.body),
    [{ selector: "env=prod" }],
  );
  t.match(JSON.parse(r.stdout), { version: "0.2.0", skipped: 2, upgrades: [{ reason: "agent_unreachable" }] });
  const both = await cli(["agents", "upgrade", "web-1", "--selector", "*"], w.env);
  t.equal(both.code, 1);
  t.match(both.stderr, /give an agent or --selector/);
  const none = await cli(["agents", "upgrade"], w.env);
  t.equal(none.code, 1);
});

t.test("upgrades --agent: lists with the filter (the agent's node id)", async (t) => {
  const w = await loggedIn(t);
  w.server.overrides.set(`GET /api/v1/agents/web-1`, (_q, res) => json(res, 200, agent));
  w.server.overrides.set("GET /api/v1/agent-upgrades", (_q, res) =>
    json(res, 200, {
      upgrades: [upgrade({ status: "succeeded" })],
      has_more: true,
      next_cursor: "01JQ0000000000000000000001",
    }),
  );
  const r = await cli(["agents", "upgrades", "--agent", "web-1"], w.env);
  t.equal(r.code, 0, r.stderr);
  t.equal(sent(w, "GET", "/api/v1/agent-upgrades")[0]!.query.get("node_id"), NODE);
  t.match(r.stdout, /^ID\s+AGENT\s+FROM\s+TO\s+STATUS\s+REASON\s+REQUESTED\n/);
  t.match(r.stdout, /succeeded/);
  t.match(r.stderr, /--cursor 01JQ0000000000000000000001/);
});
