import t from "tap";
import type { ServerResponse } from "node:http";
import { agentRecord, serveAgents } from "./helpers/agents.js";
import { cli } from "./helpers/cli.js";
import { loggedIn } from "./helpers/setup.js";

// orchctl secrets show names the agents a secret is restricted to; --json keeps the node ids.

const NODE = "0123456789abcdef0123456789abcdef";
const GONE = "fedcba9876543210fedcba9876543210";
const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};
const secret = {
  name: "db",
  description: null,
  expires_at: null,
  restriction: { node_ids: [NODE, GONE], tags: {} },
  created_at: "2025-06-01T12:00:00.000Z",
  created_by: null,
  updated_at: "2025-06-01T12:00:00.000Z",
  updated_by: null,
};

t.test("secrets show: a restriction's agents by name; an unknown node id stays the id", async (t) => {
  const w = await loggedIn(t);
  serveAgents(w, [agentRecord({ name: "web-1", node_id: NODE })]);
  w.server.overrides.set("GET /api/v1/secrets/db", (_req, res) => json(res, 200, secret));
  const r = await cli(["secrets", "show", "db"], w.env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, new RegExp(`^restriction:\\s+nodes: web-1,${GONE}$`, "m"));
  const j = await cli(["secrets", "show", "db", "--json"], w.env);
  t.same(JSON.parse(j.stdout).restriction.node_ids, [NODE, GONE]);
});
