import { readFileSync } from "node:fs";
import t from "tap";
import { openApiDocument } from "@orch/gateway";
import { GATEWAY_LOCAL, ROUTES_DOC, buildRouteMap, renderRoutesDoc, routeKey } from "../scripts/gen-route-map.ts";

// One analysis for every check: it builds a TypeScript program of every service (tens of seconds).
const map = buildRouteMap();
const byKey = new Map(map.routes.map((r) => [routeKey(r), r]));

t.test("docs/routes.md is what scripts/gen-route-map.ts writes (run npm run generate:routes)", async (t) => {
  t.equal(readFileSync(ROUTES_DOC, "utf8"), renderRoutesDoc(map));
});

t.test("the map lists exactly the routes of the OpenAPI document the gateway builds", async (t) => {
  const paths = openApiDocument().paths as Record<string, Record<string, unknown>>;
  const api = Object.entries(paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`));
  t.same(
    [...byKey.keys()].sort(),
    api.sort(),
    "packages/client/openapi.json is stale: npm run generate -w @orch/client",
  );
  const rows = [...readFileSync(ROUTES_DOC, "utf8").matchAll(/^\| `([A-Z]+ \S+)`/gm)].map((m) => m[1]!);
  t.same(rows.sort(), api.sort(), "docs/routes.md has one row per route");
});

t.test("every route is found in the sources with its auth level, and every declaration is documented", async (t) => {
  t.same(
    map.routes.filter((r) => !r.file || !r.auth || r.auth.includes("?")).map(routeKey),
    [],
    "no route({...}) under services/gateway/src/routes/ matched these",
  );
  t.same(map.undocumented, []);
});

t.test("every route calls a bus subject or is answered by the gateway itself", async (t) => {
  t.same(
    map.routes.filter((r) => !r.calls.length && !GATEWAY_LOCAL[routeKey(r)]).map(routeKey),
    [],
    "the analysis found no RPC client call: follow it in scripts/lib/route-map.ts, or list the route in GATEWAY_LOCAL",
  );
  t.same(
    Object.keys(GATEWAY_LOCAL).filter((k) => byKey.get(k)?.calls.length !== 0),
    [],
    "GATEWAY_LOCAL entries that are no route, or a route that calls the bus",
  );
});

t.test("every subject a route calls is served, by a handler the map names", async (t) => {
  const unserved = map.routes.flatMap((r) =>
    r.calls.filter((c) => !c.handler).map((c) => `${routeKey(r)} ${c.subject}`),
  );
  t.same(unserved, []);
});

t.test("a known route is followed to its handler, table and events", async (t) => {
  const approve = byKey.get("POST /api/v1/agents/{node_id}")!;
  t.equal(approve.auth, "operator");
  t.equal(approve.file, "services/gateway/src/routes/agents.ts");
  t.match(approve.calls, [
    {
      subject: "orch.agents.SetApproval",
      service: "agents",
      handler: { file: "services/agents/src/handlers/registry.ts", name: "registryHandlers.setApproval" },
      tables: ["agents.agents"],
      events: ["agent.approved", "agent.rejected"],
    },
  ]);
  // A level passed to a route installer is read from its callers; a path built from a literal union is expanded.
  t.equal(byKey.get("POST /api/v1/runs")!.auth, "admin or operator");
  t.match(byKey.get("POST /api/v1/assignments/{name}/plan")!.calls, [{ subject: "orch.state.RunAssignment" }]);
  // A stream class's reads count as the route's calls.
  t.match(byKey.get("GET /api/v1/runs/{id}/stream")!.calls, [{ subject: "orch.state.GetCommandRun" }]);
});
