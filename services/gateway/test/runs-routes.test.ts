import t from "tap";
import { ed25519, eventually } from "@orch/kit/testing";
import { openSse } from "../../audit/test/sse.js";
import { startStack } from "../../state/test/harness.js";
import { call, login, startGateway } from "./harness.js";

// /api/v1/runs over HTTP on real NATS and Postgres with the real state service and the agent-side
// command runner: input refused before anything starts (400 naming the field), admin-only by
// default (operators allowed by one config key), and the live stream of a run.
const s = await startStack(t);
await s.addAgent({ name: "web-1", tags: { role: "web" } });
await s.addAgent({ name: "web-2", tags: { role: "web" } });

const opKey = ed25519();
const created = await s.api("POST", "/operators", { name: "olga", public_key: opKey.publicKeyHex, role: "operator" });
if (created.status !== 201) throw new Error(`operator: ${created.text}`);
const operator = await login(s.gw.url, opKey);
const as = (url: string, token: string) => (method: string, path: string, body?: unknown) =>
  call(url, method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
const admin = as(s.gw.url, s.token);

t.test("bad input → 400 naming the field, and no run is started", async (t) => {
  const cases: [unknown, string, string][] = [
    [{ command: ["true"] }, "invalid_request", "selector"],
    [{ selector: "*", node_ids: ["web-1"], command: ["true"] }, "invalid_request", "node_ids"],
    [{ selector: "*" }, "invalid_command", "command"],
    [{ selector: "*", command: ["true"], script: "true" }, "invalid_command", "script"],
    [{ selector: "*", command: ["ls", 1] }, "invalid_command", "command.1"],
    [{ selector: "*", command: [""] }, "invalid_command", "command.0"],
    [{ selector: "*", command: ["x".repeat(65 * 1024)] }, "invalid_command", "command"],
    [{ selector: "*", script: "x".repeat(65 * 1024) }, "invalid_command", "script"],
    [{ selector: "*", command: ["true"], env: { "BAD-NAME": "v" } }, "invalid_command", "env.BAD-NAME"],
    [{ selector: "*", command: ["true"], env: { A: 1 } }, "invalid_command", "env.A"],
    [{ selector: "*", command: ["true"], timeout_s: 0 }, "invalid_timeout", "timeout_s"],
    [{ selector: "*", command: ["true"], timeout_s: -5 }, "invalid_timeout", "timeout_s"],
    [{ selector: "*", command: ["true"], timeout_s: 86_401 }, "invalid_timeout", "timeout_s"],
    [{ selector: "*", command: ["true"], timeout_s: 1.5 }, "invalid_timeout", "timeout_s"],
    [{ selector: "*", command: ["true"], batch: "0" }, "invalid_request", "batch"],
    [{ selector: "*", command: ["true"], max_failures: -1 }, "invalid_request", "max_failures"],
    [{ selector: "*", command: ["true"], surprise: 1 }, "invalid_request", "(root)"],
    [{ selector: "", command: ["true"] }, "invalid_request", "selector"],
    [{ node_ids: [], command: ["true"] }, "invalid_request", "node_ids"],
  ];
  for (const [body, code, field] of cases) {
    const r = await admin("POST", "/runs", body);
    const what = `${JSON.stringify(body).slice(0, 70)} → ${code} ${field}`;
    t.equal(r.status, 400, what);
    t.equal(r.body?.code, code, what);
    const fields = [r.body?.field, ...(r.body?.errors ?? []).map((e: { field: string }) => e.field)];
    t.ok(fields.includes(field), `${what}: ${JSON.stringify(fields)}`);
    // Messages never echo the input (a command line may hold a password).
    t.notMatch(r.body?.detail ?? "", /xxxxxxxx/, what);
  }
  const bad = await admin("POST", "/runs", { selector: "role in (web", command: ["true"] });
  t.equal(bad.status, 400);
  t.equal(bad.body.code, "invalid_selector");
  const list = await admin("GET", "/runs");
  t.equal(list.status, 200, list.text);
  t.same(list.body.runs, [], "nothing was started");
});

t.test("operators get 403 on every /runs route by default", async (t) => {
  const op = as(s.gw.url, operator);
  const id = "01JAAAAAAAAAAAAAAAAAAAAAAA";
  for (const [method, path, body] of [
    ["POST", "/runs", { selector: "*", command: ["true"] }],
    ["GET", "/runs"],
    ["GET", `/runs/${id}`],
    ["POST", `/runs/${id}/cancel`],
    ["GET", `/runs/${id}/stream`],
  ] as const) {
    const r = await op(method, path, body);
    t.equal(r.status, 403, `${method} ${path}`);
    t.equal(r.body.code, "admin_required");
  }
});

t.test(
  "with gateway.operators_may_run_commands operators may run; a selector matching nothing → 200, 0 targets",
  async (t) => {
    const gw2 = await startGateway(s.nats, undefined, {
      operators_may_run_commands: true,
      services: ["auth", "state"],
    });
    t.teardown(() => gw2.stop());
    const token = await login(gw2.url, opKey);
    const op = as(gw2.url, token);
    const r = await op("POST", "/runs", { selector: "role=nothing", command: ["true"] });
    t.equal(r.status, 200, r.text);
    t.match(r.body, { status: "completed", targets: 0, agents: [], started_by: { name: "olga" } });
    t.equal((await op("GET", `/runs/${r.body.id}`)).status, 200);
    // The default gateway still refuses the same operator.
    t.equal((await as(s.gw.url, operator)("GET", `/runs/${r.body.id}`)).status, 403);
  },
);

t.test("GET /runs/{id}: 404 run_not_found; cancel of a finished run → 409 run_finished", async (t) => {
  const missing = await admin("GET", "/runs/01JAAAAAAAAAAAAAAAAAAAAAAA");
  t.equal(missing.status, 404);
  t.equal(missing.body.code, "run_not_found");
  const done = await admin("POST", "/runs", { selector: "role=nothing", command: ["true"] });
  const c = await admin("POST", `/runs/${done.body.id}/cancel`);
  t.equal(c.status, 409);
  t.equal(c.body.code, "run_finished");
  t.equal(c.body.run_status, "completed");
});

t.test("the stream: run first, output as it comes (non-UTF-8 as base64), agent changes, summary, end", async (t) => {
  const r = await admin("POST", "/runs", {
    selector: "role=web",
    command: ["sh", "-c", "sleep 1; echo \"out $0\"; printf '\\377' >&2; exit 3", "x"],
  });
  t.equal(r.status, 202, r.text);
  t.equal(r.body.targets, 2);
  const sse = await openSse(`${s.gw.url}/api/v1/runs/${r.body.id}/stream`, { token: s.token });
  t.equal(sse.status, 200, JSON.stringify(sse.body));
  await sse.ended;
  const events = sse.events;
  const names = events.map((e) => e.event);
  t.equal(names[0], "run");
  t.notOk("stdout" in (events[0]!.data.agents[0] ?? {}), "no output in the run event");
  t.same(names.slice(-2), ["summary", "end"]);
  const summary = events.at(-2)!.data;
  t.equal(summary.status, "completed");
  t.equal(summary.counts.failed, 2);
  t.same(
    summary.agents.map((a: { exit_code: number }) => a.exit_code),
    [3, 3],
  );
  t.same(events.at(-1)!.data, { status: "completed" });
  const outputs = events.filter((e) => e.event === "output").map((e) => e.data);
  for (const name of ["web-1", "web-2"]) {
    const mine = outputs.filter((o) => o.name === name);
    t.ok(
      mine.some((o) => o.stream === "stdout" && o.encoding === "utf8" && o.data === "out x\n"),
      `${name} stdout: ${JSON.stringify(mine)}`,
    );
    t.ok(
      mine.some((o) => o.stream === "stderr" && o.encoding === "base64" && o.data === "/w=="),
      `${name} stderr: ${JSON.stringify(mine)}`,
    );
  }
  t.ok(
    events.some((e) => e.event === "agent" && e.data.status === "failed"),
    "agent status changes are streamed",
  );

  // A stream opened after the end replays the captured output once, then summary and end.
  const late = await openSse(`${s.gw.url}/api/v1/runs/${r.body.id}/stream`, { token: s.token });
  await late.ended;
  const lateOut = late.events.filter((e) => e.event === "output");
  t.equal(lateOut.length, 4, JSON.stringify(lateOut));
  t.ok(lateOut.every((o) => o.data.seq === 0));
  t.same(late.events.at(-1)!.event, "end");

  // GET with output, and without.
  const full = await admin("GET", `/runs/${r.body.id}`);
  t.match(full.body.agents[0], {
    stdout: "out x\n",
    stdout_encoding: "utf8",
    stderr: "/w==",
    stderr_encoding: "base64",
  });
  const bare = await admin("GET", `/runs/${r.body.id}?output=false`);
  t.notOk("stdout" in bare.body.agents[0]);
  const list = await admin("GET", "/runs?status=completed");
  t.ok(list.body.runs.some((x: { id: string }) => x.id === r.body.id));
  t.notOk("agents" in list.body.runs[0]);
});

t.test("output published before the stream opened is sent once, from storage, before the summary", async (t) => {
  const r = await admin("POST", "/runs", {
    selector: "role=web",
    command: ["sh", "-c", "echo early; sleep 3; echo late"],
  });
  t.equal(r.status, 202, r.text);
  await eventually(async () => (await admin("GET", `/runs/${r.body.id}?output=false`)).body.counts.running === 2);
  // `early` is out (and its live chunk gone by) while both agents are still running.
  await new Promise((res) => setTimeout(res, 1000));
  const sse = await openSse(`${s.gw.url}/api/v1/runs/${r.body.id}/stream`, { token: s.token });
  await sse.ended;
  t.same(sse.events.at(-2)!.event, "summary");
  for (const name of ["web-1", "web-2"]) {
    const mine = sse.events.filter((e) => e.event === "output" && e.data.name === name).map((e) => e.data);
    t.equal(mine.map((o) => o.data).join(""), "early\nlate\n", `${name}: ${JSON.stringify(mine)}`);
  }
});

t.test("cancel: a running run ends cancelled, its stream too", async (t) => {
  const r = await admin("POST", "/runs", { selector: "role=web", command: ["sleep", "30"] });
  t.equal(r.status, 202, r.text);
  const sse = await openSse(`${s.gw.url}/api/v1/runs/${r.body.id}/stream`, { token: s.token });
  await eventually(async () => {
    const g = await admin("GET", `/runs/${r.body.id}?output=false`);
    return g.body.counts.running === 2;
  });
  const c = await admin("POST", `/runs/${r.body.id}/cancel`);
  t.equal(c.status, 202, c.text);
  t.match(c.body.status, /^(cancelling|cancelled)$/);
  await sse.ended;
  t.same(sse.events.at(-1)!.data, { status: "cancelled" });
  t.equal(sse.events.at(-2)!.data.counts.cancelled, 2);
});

t.test("signing out ends a live run stream with an error event; reconnecting is refused", async (t) => {
  const key = ed25519();
  const added = await admin("POST", "/operators", {
    name: "leaving-admin",
    public_key: key.publicKeyHex,
    role: "admin",
  });
  t.equal(added.status, 201, added.text);
  const token = await login(s.gw.url, key);
  const r = await admin("POST", "/runs", { selector: "role=web", command: ["sleep", "30"] });
  t.equal(r.status, 202, r.text);
  const url = `${s.gw.url}/api/v1/runs/${r.body.id}/stream`;
  const sse = await openSse(url, { token });
  t.teardown(() => sse.close());
  await sse.waitFor(1);
  t.equal((await as(s.gw.url, token)("POST", "/auth/logout")).status, 204);
  await sse.ended;
  t.equal(sse.events.at(-1)!.event, "error");
  t.notOk(
    sse.events.some((e) => e.event === "end"),
    "it ended because of the credential, not the run",
  );
  t.equal((await openSse(url, { token })).status, 401, "reconnecting is refused");
  t.equal((await admin("POST", `/runs/${r.body.id}/cancel`)).status, 202);
});
