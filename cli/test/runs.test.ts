import t from "tap";
import type { ServerResponse } from "node:http";
import { cli } from "./helpers/cli.js";
import { loggedIn, type World } from "./helpers/setup.js";
import { runCounts } from "./helpers/run-counts.js";
import { agentRecord, serveAgents } from "./helpers/agents.js";

// orchctl run / runs against the in-test API: the body sent, the stream printed as prefixed and
// escaped lines (NDJSON with --json), the summary table and the exit status.
const ID = "01JRUN0000000000000000000A";
const agent = (name: string, o: Record<string, unknown> = {}) => ({
  node_id: `id-${name}`,
  name,
  batch: 1,
  status: "running",
  exit_code: null,
  signal: null,
  started_at: null,
  finished_at: null,
  duration_ms: 0,
  stdout_truncated: false,
  stderr_truncated: false,
  error: null,
  ...o,
});
const runOf = (o: Record<string, unknown>) => ({
  id: ID,
  status: "running",
  selector: "role=web",
  node_ids: null,
  command: ["sh", "-c", "hostname; exit 3"],
  script: null,
  env_keys: [],
  timeout_s: 300,
  batch: null,
  batch_size: 2,
  batches: 1,
  max_failures: null,
  targets: 2,
  counts: runCounts({ running: 2 }),
  maintenance_window: null,
  started_by: { id: "op", name: "alice" },
  cancelled_by: null,
  created_at: "2026-01-01T00:00:00.000Z",
  finished_at: null,
  agents: [agent("web-1"), agent("web-22")],
  ...o,
});
const failed = (name: string) => agent(name, { status: "failed", exit_code: 3, duration_ms: 1500 });
const final = runOf({
  status: "completed",
  counts: runCounts({ failed: 2 }),
  agents: [failed("web-1"), failed("web-22")],
});

const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};
const frame = (event: string, data: unknown) => `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
const out = (name: string, stream: string, data: string, encoding = "utf8") => ({
  node_id: `id-${name}`,
  name,
  stream,
  data,
  encoding,
  seq: 1,
});

function serveRun(w: World, started = runOf({})) {
  w.server.overrides.set("POST /api/v1/runs", (_req, res) =>
    json(res, started.status === "running" ? 202 : 200, started),
  );
  w.server.overrides.set(`GET /api/v1/runs/${ID}/stream`, (_req, res) => {
    res.writeHead(200, { "content-type": "text/event-stream" });
    res.write(frame("run", runOf({})));
    // web-1's line arrives in two chunks; web-22 sends a terminal escape and a byte that is not UTF-8.
    res.write(frame("output", out("web-1", "stdout", "host-")));
    res.write(frame("output", out("web-22", "stdout", "\u001b[2J/w==", "utf8")));
    res.write(frame("output", out("web-1", "stdout", "one\n")));
    res.write(frame("output", out("web-22", "stderr", Buffer.from([0xff, 0x0a]).toString("base64"), "base64")));
    res.write(frame("agent", failed("web-1")));
    res.write(frame("agent", failed("web-22")));
    res.write(frame("summary", final));
    res.end(frame("end", { status: "completed" }));
  });
  return () => w.server.requests.filter((r) => r.method === "POST" && r.path === "/api/v1/runs").map((r) => r.body);
}

t.test("run: streams prefixed, escaped lines, then the summary; non-zero when agents failed", async (t) => {
  const w = await loggedIn(t);
  const posts = serveRun(w);
  const r = await cli(
    ["run", "role=web", "--env", "A=1", "--timeout-s", "30", "--", "sh", "-c", "hostname; exit 3"],
    w.env,
  );
  t.equal(r.code, 1, r.stderr);
  t.same(posts(), [
    { selector: "role=web", command: ["sh", "-c", "hostname; exit 3"], env: { A: "1" }, timeout_s: 30 },
  ]);
  const lines = r.stdout.split("\n");
  t.ok(lines.includes("web-1  | host-one"), r.stdout);
  t.ok(lines.includes("web-22 | \\x1b[2J/w=="), "escape sequences are shown, not sent to the terminal");
  t.notMatch(r.stdout, /\x1b/);
  t.match(r.stderr, /web-22 \| \\xff\n/, "stderr output goes to stderr, escaped");
  t.match(r.stdout, /NAME\s+STATUS\s+EXIT\s+DURATION\nweb-1\s+failed\s+3\s+1\.5s\nweb-22\s+failed\s+3\s+1\.5s\n/);
  t.match(r.stderr, /run completed: 2 agents \(2 failed\)/);
  t.match(r.stderr, /\(run_failed\)/);
});

t.test("run --json: one JSON event per line", async (t) => {
  const w = await loggedIn(t);
  serveRun(w);
  const r = await cli(["--json", "run", "role=web", "--", "true"], w.env);
  t.equal(r.code, 1);
  const lines = r.stdout.trim().split("\n");
  const first = lines.slice(0, 9).map((l) => JSON.parse(l) as { event: string; data: Record<string, unknown> });
  t.same(
    first.map((e) => e.event),
    ["run", "output", "output", "output", "output", "agent", "agent", "summary", "end"],
  );
  t.equal(first[4]!.data.encoding, "base64");
  t.same(first[7]!.data, final);
  t.equal(lines.length, 9, "NDJSON only: no problem document after the run's own events");
  t.equal(r.stderr, "", "nor an error line");
});

t.test("run: a selector matching nothing is not an error", async (t) => {
  const w = await loggedIn(t);
  serveRun(w, runOf({ status: "completed", targets: 0, counts: runCounts({}), agents: [] }));
  const r = await cli(["run", "role=nothing", "--", "uptime"], w.env);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stderr, /no agent matched/);
  t.match(r.stderr, /run completed: 0 agents/);
  t.notOk(w.server.requests.some((q) => q.path.endsWith("/stream")));
  const j = await cli(["--json", "run", "role=nothing", "--", "uptime"], w.env);
  t.equal(j.code, 0, j.stderr);
  t.same(
    j.stdout
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l).event),
    ["run", "summary", "end"],
  );
});

t.test("run: --node makes every operand the command; usage errors", async (t) => {
  const w = await loggedIn(t);
  const [web1, web22] = serveAgents(w, [
    agentRecord({ name: "web-1", node_id: "aa".repeat(16) }),
    agentRecord({ name: "web-22", node_id: "bb".repeat(16) }),
  ]);
  const posts = serveRun(w);
  await cli(
    ["run", "--node", "web-1", "--node", "web-22", "--batch", "1", "--max-failures", "0", "--", "uptime", "-p"],
    w.env,
  );
  t.same(posts()[0], {
    node_ids: [web1!.node_id, web22!.node_id],
    command: ["uptime", "-p"],
    batch: 1,
    max_failures: 0,
  });
  for (const [args, msg] of [
    [["run", "role=web"], /give the command after --/],
    [["run", "--", "uptime"], /name a selector/],
    [["run", "*", "--env", "NOVALUE", "--", "true"], /--env takes NAME=value/],
    [["run", "*", "--timeout-s", "soon", "--", "true"], /--timeout-s must be a whole number/],
  ] as const) {
    const r = await cli([...args], w.env);
    t.equal(r.code, 1);
    t.match(r.stderr, msg);
  }
  t.equal(posts().length, 1, "nothing else was sent");
});

t.test("runs list / show / cancel", async (t) => {
  const w = await loggedIn(t);
  w.server.overrides.set("GET /api/v1/runs", (_req, res) =>
    json(res, 200, { runs: [{ ...final, agents: undefined }], has_more: false, next_cursor: null }),
  );
  w.server.overrides.set(`GET /api/v1/runs/${ID}`, (_req, res) =>
    json(res, 200, {
      ...final,
      agents: [
        { ...failed("web-1"), stdout: "web-1\n", stdout_encoding: "utf8", stderr: "/w==", stderr_encoding: "base64" },
      ],
    }),
  );
  w.server.overrides.set(`POST /api/v1/runs/${ID}/cancel`, (_req, res) =>
    json(res, 409, {
      type: "x",
      title: "Conflict",
      status: 409,
      detail: "run has already ended",
      code: "run_finished",
    }),
  );
  const list = await cli(["runs", "list"], w.env);
  t.equal(list.code, 0, list.stderr);
  t.match(list.stdout, new RegExp(`${ID}\\s+completed\\s+2\\s+sh -c 'hostname; exit 3'\\s+alice`));
  const show = await cli(["runs", "show", ID], w.env);
  t.equal(show.code, 0, show.stderr);
  t.match(show.stdout, /web-1 \| web-1\n/);
  t.match(show.stdout, /web-1 \| \\xff\n/);
  const cancel = await cli(["runs", "cancel", ID], w.env);
  t.equal(cancel.code, 1);
  t.match(cancel.stderr, /run_finished/);
});

t.test("runs show: cancelled_by names the operator (the id stays with --json)", async (t) => {
  const w = await loggedIn(t);
  w.server.overrides.set(`GET /api/v1/runs/${ID}`, (_req, res) =>
    json(res, 200, { ...final, status: "cancelled", cancelled_by: w.op.id, agents: [] }),
  );
  const show = await cli(["runs", "show", ID], w.env);
  t.equal(show.code, 0, show.stderr);
  t.match(show.stdout, /^cancelled_by:\s+alice$/m);
  const j = await cli(["runs", "show", ID, "--json"], w.env);
  t.equal(JSON.parse(j.stdout).cancelled_by, w.op.id);
});
