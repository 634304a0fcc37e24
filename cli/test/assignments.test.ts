import t from "tap";
import type { ServerResponse } from "node:http";
import { cli } from "./helpers/cli.js";
import { loggedIn, type World } from "./helpers/setup.js";

// orchctl assignments update against the in-test API: what is not given is sent back unchanged
// (PUT replaces the whole definition), and the API's problems reach the operator.
const stored = () => ({
  name: "web",
  selector: "role=web",
  modules: ["motd", "ntp"],
  description: "web nodes",
  created_at: "2026-01-01T00:00:00.000Z",
  created_by: "01J0000000000000000000000A",
  enforce: false,
});

const json = (res: ServerResponse, status: number, body: unknown, type = "application/json") => {
  res.writeHead(status, { "content-type": type });
  res.end(JSON.stringify(body));
};

/** The assignment `web` on the test server: GET answers it, PUT stores the body and echoes it. */
function serveWeb(w: World) {
  let current = stored();
  w.server.overrides.set("GET /api/v1/assignments/web", (_req, res) => json(res, 200, current));
  w.server.overrides.set("PUT /api/v1/assignments/web", (_req, res) => {
    current = { ...current, ...(w.server.requests.at(-1)!.body as object) };
    json(res, 200, current);
  });
  return () => w.server.requests.filter((r) => r.method === "PUT").map((r) => r.body);
}

t.test("update sends the new selector and modules and keeps the description", async (t) => {
  const w = await loggedIn(t);
  const puts = serveWeb(w);
  const r = await cli(["assignments", "update", "web", "--selector", "role=web,env=prod", "-m", "motd"], w.env);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, "Updated assignment web: role=web,env=prod → motd\n");
  t.same(puts(), [{ selector: "role=web,env=prod", modules: ["motd"], description: "web nodes" }]);
});

t.test('--module is repeatable; --description "" clears it; --json prints the assignment', async (t) => {
  const w = await loggedIn(t);
  const puts = serveWeb(w);
  const r = await cli(
    ["--json", "assignments", "update", "web", "--module", "ntp", "--module", "sshd", "--description", ""],
    w.env,
  );
  t.equal(r.code, 0, r.stderr);
  t.same(puts(), [{ selector: "role=web", modules: ["ntp", "sshd"], description: null }]);
  t.match(JSON.parse(r.stdout), { name: "web", selector: "role=web", modules: ["ntp", "sshd"], description: null });
});

t.test("update --enforce / --no-enforce set enforce mode and keep the rest; absent sends no enforce", async (t) => {
  const w = await loggedIn(t);
  const puts = serveWeb(w);
  const on = await cli(["assignments", "update", "web", "--enforce"], w.env);
  t.equal(on.code, 0, on.stderr);
  t.equal(on.stdout, "Updated assignment web: role=web → motd, ntp (enforced)\n");
  const off = await cli(["assignments", "update", "web", "--no-enforce"], w.env);
  t.equal(off.code, 0, off.stderr);
  t.equal(off.stdout, "Updated assignment web: role=web → motd, ntp (not enforced)\n");
  const kept = { selector: "role=web", modules: ["motd", "ntp"], description: "web nodes" };
  t.same(puts(), [
    { ...kept, enforce: true },
    { ...kept, enforce: false },
  ]);
});

t.test("create --enforce sends enforce: true; without the flag the field is left to the default", async (t) => {
  const w = await loggedIn(t);
  w.server.overrides.set("POST /api/v1/assignments", (_req, res) =>
    json(res, 201, { ...stored(), ...(w.server.requests.at(-1)!.body as object) }),
  );
  const posts = () => w.server.requests.filter((r) => r.method === "POST" && r.path === "/api/v1/assignments");
  const on = await cli(["assignments", "create", "web", "--selector", "role=web", "-m", "motd", "--enforce"], w.env);
  t.equal(on.code, 0, on.stderr);
  const plain = await cli(["assignments", "create", "web", "--selector", "role=web", "-m", "motd"], w.env);
  t.equal(plain.code, 0, plain.stderr);
  t.same(
    posts().map((r) => r.body),
    [
      { name: "web", selector: "role=web", modules: ["motd"], description: null, enforce: true },
      { name: "web", selector: "role=web", modules: ["motd"], description: null },
    ],
  );
  const shown = await cli(
    ["--json", "assignments", "create", "web", "--selector", "*", "-m", "motd", "--enforce"],
    w.env,
  );
  t.equal(JSON.parse(shown.stdout).enforce, true);
});

t.test("update with nothing to change is refused before any request", async (t) => {
  const w = await loggedIn(t);
  const before = w.server.requests.length;
  const r = await cli(["assignments", "update", "web"], w.env);
  t.equal(r.code, 1);
  t.match(r.stderr, /nothing to change/);
  t.equal(w.server.requests.length, before);
});

t.test("the API's problem (invalid selector) is shown and the command fails", async (t) => {
  const w = await loggedIn(t);
  serveWeb(w);
  w.server.overrides.set("PUT /api/v1/assignments/web", (_req, res) =>
    json(
      res,
      400,
      {
        type: "https://orch.dev/problems/invalid_selector",
        title: "Bad Request",
        status: 400,
        detail: "selector: expected ')' at position 12",
        code: "invalid_selector",
        field: "selector",
      },
      "application/problem+json",
    ),
  );
  const r = await cli(["assignments", "update", "web", "--selector", "role in (web"], w.env);
  t.equal(r.code, 1);
  t.match(r.stderr, /expected '\)' at position 12.*\(invalid_selector\)/);
  t.equal(r.stdout, "");
});

/** Two runs of `web` on the test server, newest first, served `limit` at a time after `cursor`. */
function serveRuns(w: World) {
  const run = (id: string, kind: string, status: string, failures: number, finished: string | null) => ({
    run_id: id,
    assignment: "web",
    kind,
    status,
    selector: "role=web",
    modules: ["motd"],
    batch_size: 0,
    batches: 1,
    max_failures: null,
    failures,
    created_at: `2026-01-0${id.endsWith("2") ? 2 : 1}T00:00:00.000Z`,
    finished_at: finished,
    started_by: "01J0000000000000000000000A",
  });
  const runs = [
    run("01J0000000000000000000RUN2", "apply", "running", 1, null),
    run("01J0000000000000000000RUN1", "plan", "completed", 0, "2026-01-01T00:01:00.000Z"),
  ];
  w.server.overrides.set("GET /api/v1/assignments/web/runs", (_req, res) => {
    const q = w.server.requests.at(-1)!.query;
    const limit = Number(q.get("limit") ?? 50);
    const start = q.get("cursor") ? runs.findIndex((r) => r.run_id === q.get("cursor")) + 1 : 0;
    const page = runs.slice(start, start + limit);
    const more = start + limit < runs.length;
    json(res, 200, { runs: page, has_more: more, next_cursor: more ? page.at(-1)!.run_id : null });
  });
  return () =>
    w.server.requests.filter((r) => r.path === "/api/v1/assignments/web/runs").map((r) => Object.fromEntries(r.query));
}

t.test("runs: a table of run id, kind, status, failures, created, finished, by; newest first", async (t) => {
  const w = await loggedIn(t);
  const gets = serveRuns(w);
  const r = await cli(["assignments", "runs", "web"], w.env);
  t.equal(r.code, 0, r.stderr);
  const lines = r.stdout.trimEnd().split("\n");
  t.match(lines[0], /^RUN\s+KIND\s+STATUS\s+FAILURES\s+CREATED\s+FINISHED\s+BY$/);
  t.match(lines[1], /^01J0000000000000000000RUN2\s+apply\s+running\s+1\s+2026-01-02T00:00:00.000Z\s+-\s+01J0+A$/);
  t.match(lines[2], /^01J0000000000000000000RUN1\s+plan\s+completed\s+0\s+2026-01-01T00:00:00.000Z\s+2026-01-01T00:01/);
  t.equal(lines.length, 3);
  t.same(gets(), [{}], "one page, the server's default size");
});

t.test("runs --limit pages with a note; --all follows the cursor; --json prints the page", async (t) => {
  const w = await loggedIn(t);
  const gets = serveRuns(w);
  const one = await cli(["assignments", "runs", "web", "--limit", "1"], w.env);
  t.equal(one.code, 0, one.stderr);
  t.equal(one.stdout.trimEnd().split("\n").length, 2, "a header and one run");
  t.match(one.stderr, /more runs: orchctl assignments runs web --cursor 01J0000000000000000000RUN2 \(or --all\)/);

  const all = await cli(["--json", "assignments", "runs", "web", "--limit", "1", "--all"], w.env);
  t.equal(all.code, 0, all.stderr);
  const doc = JSON.parse(all.stdout);
  t.same(
    doc.runs.map((r: { run_id: string }) => r.run_id),
    ["01J0000000000000000000RUN2", "01J0000000000000000000RUN1"],
  );
  t.equal(doc.has_more, false);
  t.equal(doc.next_cursor, null);
  t.same(gets().slice(1), [{ limit: "1" }, { limit: "1", cursor: "01J0000000000000000000RUN2" }]);

  const bad = await cli(["assignments", "runs", "web", "--limit", "0"], w.env);
  t.equal(bad.code, 1);
  t.match(bad.stderr, /--limit must be a positive integer/);
});
