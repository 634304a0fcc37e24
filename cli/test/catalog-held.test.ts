import t from "tap";
import type { ServerResponse } from "node:http";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { cli } from "./helpers/cli.js";
import { loggedIn, type World } from "./helpers/setup.js";

// orchctl assignments/modules writes an approval policy holds (catalog.write, docs/approvals.md),
// against the in-test API answering 202 with the change request, as the gateway does.
const send = (res: ServerResponse, status: number, body?: unknown) => {
  res.writeHead(status, body === undefined ? {} : { "content-type": "application/json" });
  res.end(body === undefined ? undefined : JSON.stringify(body));
};
const held = (summary: string) => ({ status: "held", change_request_id: "cr-1", summary });

function holdEverything(w: World) {
  w.server.overrides.set("GET /api/v1/assignments/web", (_req, res) =>
    send(res, 200, { name: "web", selector: "role=web", modules: ["motd"], description: null, enforce: false }),
  );
  w.server.overrides.set("PUT /api/v1/assignments/web", (_req, res) =>
    send(res, 202, held("update assignment web (selector)")),
  );
  w.server.overrides.set("POST /api/v1/assignments", (_req, res) => send(res, 202, held("create assignment api")));
  w.server.overrides.set("DELETE /api/v1/assignments/web", (_req, res) =>
    send(res, 202, held("delete assignment web")),
  );
  w.server.overrides.set("POST /api/v1/modules", (_req, res) =>
    send(res, 202, held("create module motd (1 resource)")),
  );
  w.server.overrides.set("DELETE /api/v1/modules/motd", (_req, res) => send(res, 202, held("delete module motd")));
}
const last = (w: World) => w.server.requests.at(-1)!;

t.test("a held assignment change prints the request and exits 0", async (t) => {
  const w = await loggedIn(t);
  holdEverything(w);
  const r = await cli(["assignments", "update", "web", "--selector", "role=web,env=prod", "--reason", "narrow"], w.env);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, "assignment web change held for approval: change request cr-1 — orchctl requests show cr-1\n");
  t.match(last(w).body, { selector: "role=web,env=prod", reason: "narrow" });
  const c = await cli(["assignments", "create", "api", "--selector", "*", "-m", "motd"], w.env);
  t.equal(c.code, 0, c.stderr);
  t.match(c.stdout, /^assignment api change held for approval: change request cr-1/);
  const j = await cli(["--json", "assignments", "rm", "web", "--reason", "unused"], w.env);
  t.equal(j.code, 0, j.stderr);
  t.same(JSON.parse(j.stdout), held("delete assignment web"), "--json prints the API's body");
  t.equal(last(w).query.get("reason"), "unused", "a delete carries the reason in the query");
});

t.test("a held module change prints the request", async (t) => {
  const w = await loggedIn(t);
  holdEverything(w);
  const file = join(w.env.HOME, "motd.yaml");
  await writeFile(file, "name: motd\nresources: []\n");
  const r = await cli(["modules", "push", file, "--reason", "new"], w.env);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, "module motd change held for approval: change request cr-1 — orchctl requests show cr-1\n");
  t.match(last(w).body, { name: "motd", reason: "new" });
  const d = await cli(["modules", "rm", "motd", "--break-glass", "--reason", "outage"], w.env);
  t.equal(d.code, 0, d.stderr);
  t.equal(last(w).query.get("break_glass"), "true");
});

t.test("--break-glass needs --reason, checked before anything is sent", async (t) => {
  const w = await loggedIn(t);
  holdEverything(w);
  const before = w.server.requests.length;
  for (const args of [
    ["assignments", "rm", "web", "--break-glass"],
    ["modules", "rm", "motd", "--break-glass", "--reason", " "],
  ]) {
    const r = await cli(args, w.env);
    t.equal(r.code, 1);
    t.match(r.stderr, /--break-glass needs --reason TEXT.*\(break_glass_reason_required\)/);
  }
  t.equal(w.server.requests.length, before, "nothing was sent");
});
