import t from "tap";
import type { ServerResponse } from "node:http";
import { cli } from "./helpers/cli.js";
import { loggedIn } from "./helpers/setup.js";

// orchctl drift against the in-test API: before any check there is no record, and the error says
// how to make one; a record's verdict reads as English for one resource and for several.

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
const resource = (id: string) => ({ module: "web", id, type: "file", status: "changed", message: "", diff: "" });
const record = (n: number) => ({
  id: "d-1",
  operation_id: "op-9",
  node_id: "0123456789abcdef0123456789abcdef",
  checked_at: "2025-06-01T12:00:00.000Z",
  drifted: n > 0,
  resources: Array.from({ length: n }, (_, i) => resource(`f${i}`)),
});

t.test("drift before any check: drift_not_found, then a hint naming --check on stderr", async (t) => {
  const w = await loggedIn(t);
  w.server.overrides.set("GET /api/v1/agents/web-1/drift/latest", (_req, res) =>
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
  const w = await loggedIn(t);
  let n = 1;
  w.server.overrides.set("GET /api/v1/agents/web-1/drift/latest", (_req, res) => json(res, 200, record(n)));
  const one = await cli(["drift", "web-1"], w.env);
  t.equal(one.code, 0, one.stderr);
  t.match(one.stdout, /^drifted: 1 resource differs \(checked/m);
  n = 2;
  const two = await cli(["drift", "web-1"], w.env);
  t.match(two.stdout, /^drifted: 2 resources differ \(checked/m);
});
