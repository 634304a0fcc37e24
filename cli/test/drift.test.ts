import t from "tap";
import type { ServerResponse } from "node:http";
import { cli } from "./helpers/cli.js";
import { loggedIn, type World } from "./helpers/setup.js";
import { agentRecord, serveAgents } from "./helpers/agents.js";

// orchctl drift against the in-test API: before any check there is no record, and the error says
// how to make one; a record's verdict reads as English for one resource and for several; --check
// exits 0 in sync, 1 on drift, 2 when the check cannot run (docs/modules.md#orchctl).

const json = (res: ServerResponse, status: number, body: unknown, type = "application/json") => {
  res.writeHead(status, { "content-type": type });
  res.end(JSON.stringify(body));
};
const notFound = {
  type: "https://orch.example/problems/drift_not_found",
  title: "drift not found",
  status: 404,
  detail: "no drift record for web-1",
  code: "drift_not_found",
};
const NODE = "0123456789abcdef0123456789abcdef";
const withAgent = <W extends Pick<World, "server">>(w: W) => {
  serveAgents(w, [agentRecord({ name: "web-1", node_id: NODE })]);
  return w;
};
const resource = (id: string) => ({ module: "web", id, type: "file", status: "changed", message: "", diff: "" });
const record = (n: number) => ({
  id: "d-1",
  operation_id: "op-9",
  node_id: NODE,
  checked_at: "2025-06-01T12:00:00.000Z",
  drifted: n > 0,
  resources: Array.from({ length: n }, (_, i) => resource(`f${i}`)),
});

t.test("drift before any check: drift_not_found, then a hint naming --check on stderr", async (t) => {
  const w = withAgent(await loggedIn(t));
  w.server.overrides.set(`GET /api/v1/agents/${NODE}/drift/latest`, (_req, res) =>
    json(res, 404, notFound, "application/problem+json"),
  );
  const r = await cli(["drift", "web-1"], w.env);
  t.equal(r.code, 1);
  t.equal(r.stdout, "");
  t.equal(
    r.stderr,
    "error: no drift record for web-1 (drift_not_found)\nhint: no drift check has run on web-1 yet; run one with: orchctl drift web-1 --check\n",
  );
  const j = await cli(["drift", "web-1", "--json"], w.env);
  t.equal(j.code, 1);
  t.same(JSON.parse(j.stdout), notFound, "--json prints the server's problem unchanged");
});

t.test("drift: 1 resource differs, 2 resources differ", async (t) => {
  const w = withAgent(await loggedIn(t));
  let n = 1;
  w.server.overrides.set(`GET /api/v1/agents/${NODE}/drift/latest`, (_req, res) => json(res, 200, record(n)));
  const one = await cli(["drift", "web-1"], w.env);
  t.equal(one.code, 0, one.stderr);
  t.match(one.stdout, /^drifted: 1 resource differs \(checked/m);
  n = 2;
  const two = await cli(["drift", "web-1"], w.env);
  t.match(two.stdout, /^drifted: 2 resources differ \(checked/m);
});

const operation = (status: string, error_code: string | null = null) => ({
  id: "op-9",
  kind: "drift",
  node_id: NODE,
  node_name: "web-1",
  status,
  error_code,
  error: null,
  modules: ["web"],
  summary: { ok: 0, changed: 0, failed: 0, skipped: 0, unsupported: 0 },
  results: [],
  created_at: "2025-06-01T12:00:00.000Z",
});

/** POST …/drift starts a check that is over at once with `status`; the latest record has `n` drifted resources. */
function serveCheck(w: Pick<World, "server">, status: string, n: number, error_code: string | null = null) {
  w.server.overrides.set(`POST /api/v1/agents/${NODE}/drift`, (_req, res) =>
    json(res, 202, { operation: operation(status, error_code) }),
  );
  w.server.overrides.set(`GET /api/v1/agents/${NODE}/drift/latest`, (_req, res) => json(res, 200, record(n)));
}

t.test("drift --check: exit 0 in sync, 1 on drift (the verdict printed, no error line)", async (t) => {
  const w = withAgent(await loggedIn(t));
  serveCheck(w, "succeeded", 0);
  const ok = await cli(["drift", "web-1", "--check"], w.env);
  t.equal(ok.code, 0, ok.stderr);
  t.match(ok.stdout, /^in sync: 0 resources differ/m);

  serveCheck(w, "succeeded", 2);
  const drifted = await cli(["drift", "web-1", "--check"], w.env);
  t.equal(drifted.code, 1);
  t.match(drifted.stdout, /^drifted: 2 resources differ/m);
  t.notMatch(drifted.stderr, /error/, "drift is the answer, not an error");
  const j = await cli(["drift", "web-1", "--check", "--json"], w.env);
  t.equal(j.code, 1);
  t.same(JSON.parse(j.stdout), record(2), "--json: the record is the one document");

  const plain = await cli(["drift", "web-1"], w.env);
  t.equal(plain.code, 0, "without --check a drifted record is only shown");
});

t.test("drift --check: exit 2 when the check cannot run", async (t) => {
  const w = withAgent(await loggedIn(t));
  serveCheck(w, "unreachable", 0, "agent_unreachable");
  const r = await cli(["drift", "web-1", "--check"], w.env);
  t.equal(r.code, 2);
  t.equal(r.stderr, "error: drift check unreachable (agent_unreachable)\n", "the code once");
  const unknown = await cli(["drift", "nosuch", "--check"], w.env);
  t.equal(unknown.code, 2, unknown.stderr);
  const j = await cli(["drift", "web-1", "--check", "--json"], w.env);
  t.equal(j.code, 2);
  t.match(JSON.parse(j.stdout), { code: "agent_unreachable" });
});

t.test("drift --help documents the exit statuses", async (t) => {
  const r = await cli(["drift", "--help"], {});
  t.match(r.stdout, /Exit status with --check: 0 the agent is in sync, 1 drift was found, 2 the check could not run/);
});
