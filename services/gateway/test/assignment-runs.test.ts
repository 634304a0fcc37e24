import t from "tap";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { ed25519, eventually } from "@orch/kit/testing";
import { openSse, type SseEvent } from "../../audit/test/sse.js";
import { startStack } from "../../state/test/harness.js";
import { call, login } from "./harness.js";

// The console's run view and assignment editor over HTTP, on real NATS and Postgres with the real
// state service and agent-side providers: the live run stream (snapshot, updates, end), a run's
// operations with results, and PUT /assignments/{name}. Every route here is an operator route.
const s = await startStack(t, { state: { operation_timeout_seconds: 3 } });
const dir = s.tempDir();
await s.addAgent({ name: "web-1", tags: { role: "web" } });
await s.addAgent({ name: "web-2", tags: { role: "web" } });
const silent = await s.addSilentAgent("web-hangs");
t.teardown(() => silent.stop());

const opKey = ed25519();
const created = await s.api("POST", "/operators", { name: "olga", public_key: opKey.publicKeyHex, role: "operator" });
if (created.status !== 201) throw new Error(`operator: ${created.text}`);
const operator = await login(s.gw.url, opKey);
const as = (token: string) => (method: string, path: string, body?: unknown) =>
  call(s.gw.url, method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
const op = as(operator);
const admin = as(s.token);

const upload = await admin("POST", "/modules", {
  name: "marker",
  content: `name: marker\nresources:\n  - { id: mark, type: file, path: '${dir}/{{ attributes.hostname }}.mark', content: 'hi' }\n`,
});
if (upload.status !== 201) throw new Error(`upload: ${upload.text}`);
await admin("POST", "/assignments", { name: "web", selector: "role=web", modules: ["marker"] });
await admin("POST", "/assignments", { name: "other", selector: "role=db", modules: ["marker"] });

const streamUrl = (name: string, runId: string) => `${s.gw.url}/api/v1/assignments/${name}/runs/${runId}/stream`;
const runs = (events: SseEvent[]) => events.filter((e) => e.event === "run").map((e) => e.data);
const statuses = (run: any) => Object.fromEntries(run.operations.map((o: any) => [o.name, o.status]));

t.test("a module names its uploader next to the uploader's id", async (t) => {
  const me = (await admin("GET", "/auth/whoami")).body;
  t.match(upload.body, { uploaded_by: me.id, uploaded_by_name: me.name });
  const listed = (await op("GET", "/modules")).body.modules.find((m: { name: string }) => m.name === "marker");
  t.match(listed, { uploaded_by: me.id, uploaded_by_name: me.name });
  t.not(me.name, me.id);
});

t.test("PUT /assignments/{name}: an operator replaces the definition; invalid input changes nothing", async (t) => {
  const r = await op("PUT", "/assignments/web", {
    selector: "name=web*,name!=nobody",
    modules: ["marker"],
    description: "every web node",
  });
  t.equal(r.status, 200, r.text);
  t.match(r.body, {
    name: "web",
    selector: "name=web*,name!=nobody",
    modules: ["marker"],
    description: "every web node",
  });
  const before = (await op("GET", "/assignments/web")).body;
  t.same(before, r.body);

  const bad = await op("PUT", "/assignments/web", { selector: "role in (web", modules: ["marker"] });
  t.equal(bad.status, 400);
  t.match(bad.type, /^application\/problem\+json/);
  t.equal(bad.body.code, "invalid_selector");
  t.equal(bad.body.field, "selector");
  t.equal((await op("PUT", "/assignments/web", { selector: "*", modules: ["ghost"] })).body.code, "module_not_found");
  t.equal((await op("PUT", "/assignments/web", { selector: "*", modules: [] })).status, 400, "a module is required");
  t.equal(
    (await op("PUT", "/assignments/ghost", { selector: "*", modules: ["marker"] })).body.code,
    "assignment_not_found",
  );
  t.same((await op("GET", "/assignments/web")).body, before, "nothing changed");

  const byAdmin = await admin("PUT", "/assignments/web", { selector: "name=web*", modules: ["marker"] });
  t.equal(byAdmin.status, 200, "an admin may too");
  t.equal(byAdmin.body.description, null);
});

let finished: any;

t.test("the run stream sends the snapshot, then each change, then end, for a real apply", async (t) => {
  const started = await op("POST", "/assignments/web/apply");
  t.equal(started.status, 202);
  const runId = started.body.run_id;
  const stream = await openSse(streamUrl("web", runId), { token: operator });
  t.teardown(() => stream.close());
  t.equal(stream.status, 200);
  t.match(stream.headers["content-type"], /^text\/event-stream/);
  t.equal(stream.headers["cache-control"], "no-cache");
  t.ok(stream.headers["content-security-policy"], "written past fastify, still with the security headers");

  const [first] = await stream.waitFor(1);
  t.equal(first!.event, "run");
  t.equal(first!.data.run_id, runId);
  t.equal(first!.data.status, "running", "web-hangs keeps the run open for its 3 s deadline");

  // web-1 and web-2 finish at once while web-hangs still runs: an update arrives before the end.
  await eventually(() =>
    runs(stream.events).some((r) => r.status === "running" && statuses(r)["web-1"] === "succeeded"),
  );
  await stream.ended;
  const last = stream.events.at(-1)!;
  t.equal(last.event, "end");
  t.same(last.data, { status: "completed" });
  const all = runs(stream.events);
  finished = all.at(-1);
  t.same(statuses(finished), { "web-1": "succeeded", "web-2": "succeeded", "web-hangs": "timed_out" });
  t.equal(finished.status, "completed");
  for (let i = 1; i < all.length; i++)
    t.not(JSON.stringify(all[i]), JSON.stringify(all[i - 1]), `update ${i} differs from the one before`);
  t.same(finished, (await op("GET", `/assignments/web/runs/${runId}`)).body, "the last snapshot is the stored run");
  t.ok(existsSync(join(dir, "web-1.mark")) && existsSync(join(dir, "web-2.mark")), "the apply really ran");
});

t.test("a client connecting after the run ended gets the final snapshot and end at once", async (t) => {
  for (const token of [operator, s.token]) {
    const stream = await openSse(streamUrl("web", finished.run_id), { token });
    t.equal(stream.status, 200);
    await stream.ended;
    t.same(
      stream.events.map((e) => e.event),
      ["run", "end"],
    );
    t.same(stream.events[0]!.data, finished);
  }
});

t.test("the stream answers problem+json before it starts", async (t) => {
  const other = await openSse(streamUrl("other", finished.run_id), { token: operator });
  t.equal(other.status, 404, "a run belongs to its assignment");
  t.match(other.headers["content-type"], /^application\/problem\+json/);
  t.equal(other.body.code, "run_not_found");
  const unknown = await openSse(streamUrl("web", "01J0000000000000000000000A"), { token: operator });
  t.equal(unknown.body.code, "run_not_found");
  const bad = await openSse(streamUrl("web", "not-a-ulid"), { token: operator });
  t.equal(bad.status, 400);
  const anonymous = await openSse(streamUrl("web", finished.run_id));
  t.equal(anonymous.status, 401);
});

t.test("signing out ends a live stream with an error event", async (t) => {
  const key = ed25519();
  await admin("POST", "/operators", { name: "leaving", public_key: key.publicKeyHex, role: "operator" });
  const token = await login(s.gw.url, key);
  await admin("PUT", "/assignments/other", { selector: "name=web-hangs", modules: ["marker"] });
  const started = await admin("POST", "/assignments/other/apply");
  const stream = await openSse(streamUrl("other", started.body.run_id), { token });
  t.teardown(() => stream.close());
  await stream.waitFor(1);
  t.equal((await as(token)("POST", "/auth/logout")).status, 204);
  await stream.ended;
  const last = stream.events.at(-1)!;
  t.equal(last.event, "error");
  t.match(last.data, { code: String });
  t.notOk(
    stream.events.some((e) => e.event === "end"),
    "it ended because of the credential, not the run",
  );
  t.equal((await openSse(streamUrl("other", started.body.run_id), { token })).status, 401, "reconnecting is refused");
});

t.test("GET …/runs/{run_id}/operations pages the run's operations with their results", async (t) => {
  const path = `/assignments/web/runs/${finished.run_id}/operations`;
  const r = await op("GET", path);
  t.equal(r.status, 200, r.text);
  t.equal(r.body.has_more, false);
  t.equal(r.body.next_cursor, null);
  t.same(r.body.operations.map((o: any) => o.node_name).sort(), ["web-1", "web-2", "web-hangs"]);
  const web1 = r.body.operations.find((o: any) => o.node_name === "web-1");
  t.match(web1, { run_id: finished.run_id, assignment: "web", status: "succeeded" });
  t.match(web1.results, [{ id: "mark", module: "marker", type: "file", status: "changed", changed: true }]);
  t.match(web1.results[0].diff, /hi/);
  t.match(
    r.body.operations.find((o: any) => o.node_name === "web-hangs"),
    {
      status: "timed_out",
      error_code: "operation_timed_out",
      results: [],
    },
  );

  const one = await admin("GET", `${path}?limit=2`);
  t.equal(one.body.operations.length, 2);
  t.equal(one.body.has_more, true);
  const rest = await admin("GET", `${path}?limit=2&cursor=${one.body.next_cursor}`);
  t.equal(rest.body.operations.length, 1);
  t.equal(rest.body.has_more, false);

  t.equal((await op("GET", `${path}?limit=101`)).status, 400, "at most 100 per page");
  t.equal((await op("GET", `${path}?cursor=garbage!`)).body.code, "invalid_cursor");
  const wrong = await op("GET", `/assignments/other/runs/${finished.run_id}/operations`);
  t.equal(wrong.status, 404);
  t.equal(wrong.body.code, "run_not_found");
});

t.test("GET /assignments/{name}/runs lists the runs newest first, without operations, page by page", async (t) => {
  const plan = await op("POST", "/assignments/web/plan?wait=30");
  t.equal(plan.status, 200, plan.text);
  const r = await op("GET", "/assignments/web/runs");
  t.equal(r.status, 200, r.text);
  t.same(
    r.body.runs.map((x: any) => [x.run_id, x.kind]),
    [
      [plan.body.run_id, "plan"],
      [finished.run_id, "apply"],
    ],
    "newest first, only this assignment's",
  );
  t.equal(r.body.has_more, false);
  t.equal(r.body.next_cursor, null);
  const { operations: _, ...summary } = finished;
  t.same(r.body.runs[1], summary, "the run as GET returns it, minus operations");

  const first = await op("GET", "/assignments/web/runs?limit=1");
  t.same(
    first.body.runs.map((x: any) => x.run_id),
    [plan.body.run_id],
  );
  t.equal(first.body.has_more, true);
  const second = await op("GET", `/assignments/web/runs?limit=1&cursor=${first.body.next_cursor}`);
  t.same(
    second.body.runs.map((x: any) => x.run_id),
    [finished.run_id],
  );
  t.equal(second.body.has_more, false);
  t.equal(second.body.next_cursor, null);

  const bad = await op("GET", "/assignments/web/runs?cursor=garbage!");
  t.equal(bad.status, 400);
  t.match(bad.type, /^application\/problem\+json/);
  t.equal(bad.body.code, "invalid_cursor");
  t.equal((await op("GET", "/assignments/web/runs?limit=201")).status, 400, "at most 200 per page");
  t.same((await op("GET", "/assignments/never-ran/runs")).body.runs, []);

  t.equal((await admin("DELETE", "/assignments/web")).status, 204);
  t.equal((await op("GET", "/assignments/web/runs")).body.runs.length, 2, "a deleted assignment's runs still list");
});
