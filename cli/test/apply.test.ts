import t from "tap";
import type { ServerResponse } from "node:http";
import { agentRecord, serveAgents } from "./helpers/agents.js";
import { cli } from "./helpers/cli.js";
import { loggedIn } from "./helpers/setup.js";

// orchctl plan/apply against the in-test API: an operation that failed as a whole exits 1 and
// names its error code once.

const NODE = "0123456789abcdef0123456789abcdef";
const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};

t.test("plan failed: `error: plan failed (secret_not_permitted)`, the code not repeated", async (t) => {
  const w = await loggedIn(t);
  serveAgents(w, [agentRecord({ name: "web-1", node_id: NODE })]);
  w.server.overrides.set(`POST /api/v1/agents/${NODE}/plan`, (_req, res) =>
    json(res, 202, {
      id: "op-1",
      kind: "plan",
      node_id: NODE,
      node_name: "web-1",
      status: "failed",
      error_code: "secret_not_permitted",
      error: "secret db may not be sent to web-1",
      modules: ["web"],
      summary: { ok: 0, changed: 0, failed: 0, skipped: 0, unsupported: 0 },
      results: [],
      created_at: "2025-06-01T12:00:00.000Z",
    }),
  );
  const r = await cli(["plan", "web-1", "-m", "web"], w.env);
  t.equal(r.code, 1);
  t.match(r.stdout, /^plan op-1 on web-1: failed \(secret_not_permitted: secret db may not be sent to web-1\)/m);
  t.match(r.stderr, /^error: plan failed \(secret_not_permitted\)$/m);
  t.equal(r.stderr.split("secret_not_permitted").length - 1, 1, "the code appears once on stderr");
});
