import type { ServerResponse } from "node:http";
import t from "tap";
import { cli } from "./helpers/cli.js";
import { loggedIn } from "./helpers/setup.js";

// `orchctl audit retention set`: `off` turns pruning off (PUT null: null disables pruning);
// `default` removes the override (DELETE), so the configuration file's value applies again.
const json = (res: ServerResponse, body: unknown) => {
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};

t.test("audit retention set off | default | <days>", async (t) => {
  const w = await loggedIn(t);
  w.server.overrides.set("PUT /api/v1/audit/retention", (_req, res) =>
    json(res, { retention_days: null, source: "override", default_retention_days: 30 }),
  );
  w.server.overrides.set("DELETE /api/v1/audit/retention", (_req, res) =>
    json(res, { retention_days: 30, source: "config", default_retention_days: 30 }),
  );
  const last = () => w.server.requests.at(-1)!;

  for (const word of ["off", "null"]) {
    const r = await cli(["audit", "retention", "set", word], w.env);
    t.equal(r.code, 0, r.stderr);
    t.same([last().method, last().path, last().body], ["PUT", "/api/v1/audit/retention", { retention_days: null }]);
    t.match(r.stdout, /retention_days:?\s+off/);
    t.match(r.stdout, /override/);
  }

  const d = await cli(["--json", "audit", "retention", "set", "default"], w.env);
  t.equal(d.code, 0, d.stderr);
  t.same([last().method, last().path, last().body], ["DELETE", "/api/v1/audit/retention", undefined]);
  t.same(JSON.parse(d.stdout), { retention_days: 30, source: "config", default_retention_days: 30 });

  const n = await cli(["audit", "retention", "set", "14"], w.env);
  t.equal(n.code, 0, n.stderr);
  t.same(last().body, { retention_days: 14 });

  const before = w.server.requests.length;
  const bad = await cli(["audit", "retention", "set", "0"], w.env);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /whole number ≥ 1, `off` or `default`/);
  t.equal(w.server.requests.length, before, "nothing sent");
});
