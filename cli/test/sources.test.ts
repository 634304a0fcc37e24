import t from "tap";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import type { ServerResponse } from "node:http";
import { cli } from "./helpers/cli.js";
import { loggedIn, type World } from "./helpers/setup.js";

// orchctl sources against the in-test API: the bodies sent (credentials from the environment or
// files, never argv), the webhook URL and one-time secret, sync and plan output and exit codes.

const KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----\n";
const SHA = "0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c";
const NEXT = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432";
const source = (o: Record<string, unknown> = {}) => ({
  name: "fleet",
  url: "https://git.example.com/acme/fleet.git",
  branch: "main",
  path: "",
  interval_s: 300,
  auth: "token",
  status: "ok",
  commit: SHA,
  synced_at: "2026-01-01T00:00:00.000Z",
  attempted_at: "2026-01-01T00:00:00.000Z",
  attempted_commit: SHA,
  next_sync_at: "2026-01-01T00:05:00.000Z",
  error: null,
  errors: [],
  failures: 0,
  module_count: 2,
  assignment_count: 1,
  created_at: "2025-12-31T00:00:00.000Z",
  created_by: "01J0000000000000000000000A",
  ...o,
});
const failedSync = source({
  status: "error",
  attempted_commit: NEXT,
  error: "1 file(s) invalid",
  errors: [{ file: "modules/web.yaml", line: 3, column: 5, code: "invalid_yaml", message: "bad indentation" }],
  failures: 1,
});
const operation = {
  id: "op-1",
  node_id: "0123456789abcdef0123456789abcdef",
  node_name: "web-1",
  kind: "plan",
  modules: ["web"],
  status: "succeeded",
  created_at: "2026-01-01T00:00:00.000Z",
  started_at: null,
  finished_at: null,
  deadline: "2026-01-01T00:05:00.000Z",
  actor: { id: "op", name: "alice" },
  summary: { ok: 0, changed: 1, failed: 0, skipped: 0, unsupported: 0 },
  error_code: null,
  error: null,
  assignment: "web",
  run_id: "01JRUN0000000000000000000A",
  remediates: null,
  results: [
    {
      id: "motd",
      module: "web",
      type: "file",
      status: "changed",
      changed: true,
      diff: "--- a\n+++ b\n@@ -1 +1 @@\n-one\n+two\n",
      message: "",
      duration_ms: 1,
      has_output: false,
    },
  ],
};
const plan = (o: Record<string, unknown> = {}) => ({
  source: "fleet",
  ref: "feature",
  commit: NEXT,
  current_commit: SHA,
  errors: [],
  modules_changed: ["web"],
  modules_removed: [],
  assignments: [
    {
      name: "web",
      change: "updated",
      run: {
        run_id: "01JRUN0000000000000000000A",
        operations: [{ node_id: operation.node_id, name: "web-1", status: "succeeded" }],
      },
      operations: [operation],
    },
    { name: "db", change: "unchanged", run: null, operations: [] },
  ],
  complete: true,
  ...o,
});

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};
const sent = (w: World, method: string, path: string) =>
  w.server.requests.filter((r) => r.method === method && r.path === path).map((r) => r.body);

function serveCreate(w: World, secret = "generated-secret-value-XYZ") {
  w.server.overrides.set("POST /api/v1/sources", (_req, res) => {
    const body = w.server.requests.at(-1)!.body as { name: string; url: string; webhook_secret?: string };
    json(res, 201, {
      ...source({ name: body.name, url: body.url, status: "pending", commit: null }),
      webhook_secret: body.webhook_secret ?? secret,
    });
  });
}

t.test("add: the token comes from the environment, the webhook secret is printed once with the URL", async (t) => {
  const w = await loggedIn(t);
  serveCreate(w);
  const token = "ghp_from-the-environment-0123";
  const r = await cli(
    [
      "sources",
      "add",
      "fleet",
      "--url",
      "https://git.example.com/acme/fleet.git",
      "--branch",
      "prod",
      "--path",
      "infra",
      "--interval",
      "60",
      "--token-env",
      "FLEET_TOKEN",
    ],
    { ...w.env, FLEET_TOKEN: token },
  );
  t.equal(r.code, 0, r.stderr);
  t.same(sent(w, "POST", "/api/v1/sources"), [
    {
      name: "fleet",
      url: "https://git.example.com/acme/fleet.git",
      branch: "prod",
      path: "infra",
      interval_s: 60,
      auth: { token },
    },
  ]);
  t.match(r.stdout, `Webhook URL:    ${w.server.url}/api/v1/sources/fleet/webhook`);
  t.match(r.stdout, /Webhook secret: generated-secret-value-XYZ\s+\(shown this once/);
  t.notMatch(r.stdout + r.stderr, token, "the token is never printed");

  const j = await cli(["--json", "sources", "add", "fleet", "--url", "https://x.example/r.git"], w.env);
  t.equal(j.code, 0, j.stderr);
  t.match(JSON.parse(j.stdout), {
    name: "fleet",
    webhook_secret: "generated-secret-value-XYZ",
    webhook_url: `${w.server.url}/api/v1/sources/fleet/webhook`,
  });
});

t.test("add: a given webhook secret and key files; a supplied secret is not echoed", async (t) => {
  const w = await loggedIn(t);
  serveCreate(w);
  // Beside the orchctl home (a second t.testdir() would replace the one holding the session).
  const dir = w.env.HOME;
  await writeFile(join(dir, "deploy_key"), KEY);
  await writeFile(join(dir, "token"), "tok-from-file\n");
  const secret = "a-webhook-secret-of-at-least-16";
  const ssh = await cli(
    [
      "sources",
      "add",
      "fleet",
      "--url",
      "git@git.example.com:acme/fleet.git",
      "--ssh-key",
      join(dir, "deploy_key"),
      "--webhook-secret-env",
      "HOOK",
    ],
    { ...w.env, HOOK: secret },
  );
  t.equal(ssh.code, 0, ssh.stderr);
  const [first] = sent(w, "POST", "/api/v1/sources") as { auth: unknown; webhook_secret: string }[];
  t.same(first!.auth, { ssh_key: KEY });
  t.equal(first!.webhook_secret, secret);
  t.match(ssh.stdout, "Webhook secret: the value of $HOOK");
  t.notMatch(ssh.stdout, secret);

  const file = await cli(
    [
      "sources",
      "add",
      "fleet",
      "--url",
      "https://git.example.com/r.git",
      "--token-file",
      join(dir, "token"),
      "--username",
      "bot",
    ],
    w.env,
  );
  t.equal(file.code, 0, file.stderr);
  t.same((sent(w, "POST", "/api/v1/sources")[1] as { auth: unknown }).auth, {
    token: "tok-from-file",
    username: "bot",
  });
});

t.test("add: usage errors send nothing", async (t) => {
  const w = await loggedIn(t);
  serveCreate(w);
  for (const [args, env, msg] of [
    [["--token-env", "UNSET_VAR"], {}, /UNSET_VAR is not set/],
    [["--token-env", "T", "--ssh-key", "key"], { T: "x" }, /one of --token-env, --token-file or --ssh-key/],
    [["--username", "bot"], {}, /--username goes with/],
    [["--interval", "5m"], {}, /--interval must be a whole number/],
    [["--ssh-key", "/nonexistent/key"], {}, /cannot read SSH key/],
    [["--webhook-secret-env", "NOPE"], {}, /NOPE is not set/],
  ] as const) {
    const r = await cli(["sources", "add", "fleet", "--url", "https://x.example/r.git", ...args], { ...w.env, ...env });
    t.equal(r.code, 1, args.join(" "));
    t.match(r.stderr, msg);
  }
  t.equal(sent(w, "POST", "/api/v1/sources").length, 0);
});

t.test("list, get (with per-file errors) and rm", async (t) => {
  const w = await loggedIn(t);
  w.server.overrides.set("GET /api/v1/sources", (_req, res) =>
    json(res, 200, { sources: [source(), failedSync], has_more: false, next_cursor: null }),
  );
  w.server.overrides.set("GET /api/v1/sources/fleet", (_req, res) => json(res, 200, failedSync));
  w.server.overrides.set("DELETE /api/v1/sources/fleet", (_req, res) => {
    res.writeHead(204);
    res.end();
  });
  const l = await cli(["sources", "list"], w.env);
  t.equal(l.code, 0, l.stderr);
  t.match(l.stdout, /^NAME\s+URL\s+BRANCH\s+STATUS\s+COMMIT\s+SYNCED\s+ERROR\n/);
  t.match(
    l.stdout,
    /fleet\s+https:\/\/git\.example\.com\/acme\/fleet\.git\s+main\s+ok\s+0d1a26e\s+2026-01-01T00:00:00\.000Z\s+-\n/,
  );
  t.match(l.stdout, /error\s+0d1a26e\s+\S+\s+1 file\(s\) invalid/);

  const g = await cli(["sources", "get", "fleet"], w.env);
  t.equal(g.code, 0, g.stderr);
  t.match(g.stdout, /status:\s+error/);
  t.match(g.stdout, /errors:\n {2}modules\/web\.yaml:3:5: bad indentation \(invalid_yaml\)\n/);
  const gj = await cli(["--json", "sources", "get", "fleet"], w.env);
  t.same(JSON.parse(gj.stdout), failedSync);

  const rm = await cli(["sources", "rm", "fleet"], w.env);
  t.equal(rm.code, 0, rm.stderr);
  t.equal(rm.stdout, "Deleted git source fleet\n");
});

t.test("sync: the new commit; a failed sync names file and line and exits 1", async (t) => {
  const w = await loggedIn(t);
  let answer = source();
  w.server.overrides.set("POST /api/v1/sources/fleet/sync", (_req, res) => json(res, 200, answer));
  const ok = await cli(["sources", "sync", "fleet"], w.env);
  t.equal(ok.code, 0, ok.stderr);
  t.equal(ok.stdout, "Synced fleet to 0d1a26e (2 modules, 1 assignment)\n");

  answer = failedSync;
  const bad = await cli(["sources", "sync", "fleet"], w.env);
  t.equal(bad.code, 1);
  t.equal(
    bad.stdout,
    "Sync of fleet at 9f8e7d6 failed: 1 file(s) invalid\n  modules/web.yaml:3:5: bad indentation (invalid_yaml)\nCommit 0d1a26e stays in force; nothing changed\n",
  );
  t.match(bad.stderr, /\(source_sync_failed\)/);
  const j = await cli(["--json", "sources", "sync", "fleet"], w.env);
  t.equal(j.code, 1);
  t.same(JSON.parse(j.stdout), failedSync, "one JSON document: the source");
});

t.test("plan --ref: per assignment, per agent diffs; --json for CI; tree errors exit 1", async (t) => {
  const w = await loggedIn(t);
  let answer: unknown = plan();
  w.server.overrides.set("POST /api/v1/sources/fleet/plan", (_req, res) => json(res, 200, answer));
  const r = await cli(["sources", "plan", "fleet", "--ref", "feature", "--wait", "30"], w.env);
  t.equal(r.code, 0, r.stderr);
  t.same(sent(w, "POST", "/api/v1/sources/fleet/plan"), [{ ref: "feature", wait_seconds: 30 }]);
  const lines = r.stdout.split("\n");
  t.equal(lines[0], "Plan of fleet at feature (9f8e7d6; in force: 0d1a26e)");
  t.ok(lines.includes("modules changed: web"));
  t.ok(lines.includes("assignment web: updated"));
  t.ok(lines.includes("  plan op-1 on web-1: succeeded — 1 changed"), r.stdout);
  t.ok(lines.includes("        -one") && lines.includes("        +two"), "the diff, under its agent");
  t.ok(lines.includes("assignment db: unchanged"));
  t.ok(lines.includes("1 of 2 assignments would change"));

  const j = await cli(["--json", "sources", "plan", "fleet", "--ref", "feature"], w.env);
  t.equal(j.code, 0, j.stderr);
  t.same(JSON.parse(j.stdout), plan());
  t.same(sent(w, "POST", "/api/v1/sources/fleet/plan")[1], { ref: "feature" });

  answer = plan({ errors: failedSync.errors, assignments: [], modules_changed: [] });
  const bad = await cli(["sources", "plan", "fleet"], w.env);
  t.equal(bad.code, 1);
  t.match(
    bad.stdout,
    /1 error in the tree; nothing planned:\n {2}modules\/web\.yaml:3:5: bad indentation \(invalid_yaml\)/,
  );
  const badJson = await cli(["--json", "sources", "plan", "fleet"], w.env);
  t.equal(badJson.code, 1);
  t.same(JSON.parse(badJson.stdout).errors, failedSync.errors);
  t.equal(badJson.stderr, "");
});
