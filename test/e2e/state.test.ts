import t from "tap";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { AuditEventSchema, type AuditEvent } from "@orch/contracts";
import { eventually } from "@orch/kit/testing";
import { startStateStack } from "./lib/state-stack.js";

// State end to end with real processes (auth, agents, secrets, state, gateway) and a real
// orch-agent: plan/apply/idempotence, exec output, failures skipping dependents, drift (manual,
// scheduled, cleared by re-apply), and an operation outliving a killed state service.
// Needs `npm run build` (dist/main.js of the services and of agent/).
const {
  nats,
  linkPort,
  system,
  agents,
  dir: root,
} = await startStateStack(t, {
  name: "state",
  keyByte: 7,
  env: {
    ORCH_STATE_DRIFT_INTERVAL_SECONDS: "3",
    ORCH_STATE_OPERATION_TIMEOUT_SECONDS: "8",
    ORCH_STATE_SWEEP_INTERVAL_SECONDS: "1",
  },
});
const nc = await nats.connect("e2e-events");
const events: AuditEvent[] = [];
const sub = nc.subscribe("audit.>", { callback: (_e, m) => void events.push(fromBinary(AuditEventSchema, m.data)) });
t.teardown(() => sub.unsubscribe());
const token = await system.login(system.admin);
const api = (method: string, path: string, body?: unknown) =>
  system.api(method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
const must = async (p: ReturnType<typeof api>, status: number) => {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
};
const eventOf = (type: string, pred: (e: AuditEvent) => boolean = () => true) =>
  eventually(() => events.find((e) => e.eventType === type && pred(e)), 15_000);

const agent = agents.spawn(["--server", `127.0.0.1:${linkPort}`]);
const web = await agent.nodeId();
await eventually(async () => (await api("GET", `/agents/${web}`)).body?.connected === true, 20_000);
await must(api("POST", `/agents/${web}`, { status: "approved", name: "web-1" }), 200);
await must(api("PUT", `/agents/${web}/tags`, { tags: { env: "test", slot: "w1" } }), 200);

const site = `${root}/w1`;
await must(
  api("POST", "/modules", {
    name: "site",
    content: [
      "name: site",
      "description: files, a directory and a guarded exec",
      "resources:",
      "  - id: docroot",
      "    type: directory",
      `    path: ${root}/{{ tags.slot }}`,
      '    mode: "0750"',
      "  - id: index",
      "    type: file",
      `    path: ${root}/{{ tags.slot }}/index.html`,
      '    content: "<h1>{{ tags.env }} on {{ attributes.hostname }}</h1>\\n"',
      "    requires: [docroot]",
      "  - id: build",
      "    type: exec",
      `    command: "echo generated > ${root}/{{ tags.slot }}/generated.txt && echo build-ok && echo build-warn >&2"`,
      `    creates: ${root}/{{ tags.slot }}/generated.txt`,
      "    requires: [index]",
      "",
    ].join("\n"),
  }),
  201,
);
const run = (kind: "apply" | "plan", modules: string[]) =>
  must(api("POST", `/agents/web-1/${kind}?wait=60`, { modules }), 200);

t.test(
  "plan shows a unified diff and changes nothing; apply creates and runs; a second apply and plan change nothing",
  async (t) => {
    const plan = await run("plan", ["site"]);
    t.equal(plan.status, "succeeded");
    t.same(plan.summary, { ok: 0, changed: 3, failed: 0, skipped: 0, unsupported: 0 });
    const diff = plan.results.find((r: any) => r.id === "index").diff;
    t.match(diff, /^\+\+\+ /m, "a unified diff");
    t.match(diff, /^\+<h1>test on .+<\/h1>$/m);
    t.notOk(existsSync(site), "nothing on disk after the plan");

    const apply = await run("apply", ["site"]);
    t.equal(apply.status, "succeeded");
    t.same(
      apply.results.map((r: any) => [r.id, r.status]),
      [
        ["docroot", "changed"],
        ["index", "changed"],
        ["build", "changed"],
      ],
    );
    t.match(readFileSync(join(site, "index.html"), "utf8"), /^<h1>test on /);
    t.equal(readFileSync(join(site, "generated.txt"), "utf8"), "generated\n", "the exec ran");

    const out = await must(api("GET", `/agents/${web}/state/operations/${apply.id}/output`), 200);
    t.same(
      out.outputs,
      [{ id: "build", module: "site", stdout: "build-ok\n", stderr: "build-warn\n" }],
      "exec output is retrievable",
    );

    const again = await run("apply", ["site"]);
    t.same(again.summary, { ok: 3, changed: 0, failed: 0, skipped: 0, unsupported: 0 }, "second apply: zero changes");
    const replan = await run("plan", ["site"]);
    t.same(
      replan.summary,
      { ok: 3, changed: 0, failed: 0, skipped: 0, unsupported: 0 },
      "second plan: nothing to change",
    );
    t.ok(replan.results.every((r: any) => !r.changed && r.diff === ""));

    const believed = await must(api("GET", `/agents/web-1/state`), 200);
    t.same(
      believed.resources.map((r: any) => [r.id, r.operation_id]),
      [
        ["build", again.id],
        ["docroot", again.id],
        ["index", again.id],
      ],
    );
    await eventOf("state.apply.succeeded", (e) => e.metadata?.operation_id === apply.id);
    await eventOf("state.plan.completed", (e) => e.metadata?.operation_id === plan.id);
  },
);

t.test(
  "a hand edit: the scheduled check finds it within the interval, a manual check names exactly it, re-apply clears it",
  async (t) => {
    const editedAt = Date.now();
    writeFileSync(join(site, "index.html"), "<h1>defaced</h1>\n");
    const detected = await eventOf(
      "drift.detected",
      (e) => e.target?.id === web && Date.parse(e.timestamp) >= editedAt,
    );
    t.equal(detected.actor?.type, "system", "found by the scheduled check (every 3 s here), with nobody asking");
    t.same(detected.metadata?.resources, ["site/index"]);

    const check = await must(api("POST", `/agents/web-1/drift?wait=60`), 200);
    t.equal(check.drift.drifted, true);
    t.same(
      check.drift.resources.map((r: any) => `${r.module}/${r.id}`),
      ["site/index"],
      "exactly the edited resource",
    );
    t.match(check.drift.resources[0].diff, /^-<h1>defaced<\/h1>$/m);
    t.same((await must(api("GET", `/agents/web-1/drift/latest`), 200)).id, check.drift.id);
    t.same((await must(api("GET", `/drift/${check.drift.id}`), 200)).resources.length, 1);

    const reapply = await run("apply", ["site"]);
    t.same(
      reapply.results.filter((r: any) => r.changed).map((r: any) => r.id),
      ["index"],
    );
    const cleared = await eventOf("drift.cleared", (e) => e.target?.id === web);
    t.equal(cleared.metadata?.operation_id, reapply.id, "drift.cleared by the re-apply");
    t.equal((await must(api("GET", `/agents/web-1/drift/latest`), 200)).drifted, false);
    const history = await must(api("GET", `/agents/web-1/drift?limit=500`), 200);
    t.ok(history.records.length >= 3, "drift history kept, newest first");
  },
);

t.test("a failed resource skips its dependents and fails the operation", async (t) => {
  await must(
    api("POST", "/modules", {
      name: "broken",
      content: [
        "name: broken",
        "resources:",
        "  - { id: migrate, type: exec, command: 'echo migration failed >&2; exit 4' }",
        `  - { id: ready, type: file, path: '${root}/ready', content: ok, requires: [migrate] }`,
        "",
      ].join("\n"),
    }),
    201,
  );
  const op = await run("apply", ["broken"]);
  t.equal(op.status, "failed");
  t.same(
    op.results.map((r: any) => [r.id, r.status]),
    [
      ["migrate", "failed"],
      ["ready", "skipped"],
    ],
  );
  t.notOk(existsSync(join(root, "ready")));
  const out = await must(api("GET", `/agents/${web}/state/operations/${op.id}/output`), 200);
  t.equal(out.outputs[0].stderr, "migration failed\n");
  await eventOf("state.apply.failed", (e) => e.metadata?.operation_id === op.id);
});

t.test("an operation running when the state service is killed ends timed_out after the restart", async (t) => {
  await must(
    api("POST", "/modules", {
      name: "slow",
      content: "name: slow\nresources:\n  - { id: wait, type: exec, command: 'sleep 30' }\n",
    }),
    201,
  );
  const started = await must(api("POST", `/agents/web-1/apply`, { modules: ["slow"] }), 202);
  await eventually(async () => (await api("GET", `/state/operations/${started.id}`)).body.status === "running", 15_000);
  await system.kill("state", "SIGKILL");
  await system.start("state");
  const ended = await eventually(async () => {
    const r = await api("GET", `/state/operations/${started.id}`);
    return r.status === 200 && r.body.status !== "running" ? r.body : undefined;
  }, 30_000);
  t.equal(ended.status, "timed_out");
  t.equal(ended.error_code, "operation_timed_out");
  await eventOf(
    "state.apply.failed",
    (e) => e.metadata?.operation_id === started.id && e.metadata?.status === "timed_out",
  );
});
