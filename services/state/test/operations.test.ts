import t from "tap";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startStack } from "./harness.js";

// Per-agent apply and plan through the gateway, with the real providers of agent/src/state acting
// on temporary directories, the real secrets service, real NATS and Postgres.
const s = await startStack(t);
const dir = s.tempDir();
const web1 = await s.addAgent({ name: "web-1", tags: { env: "test", role: "web" } });
const web2 = await s.addAgent({ name: "web-2", tags: { env: "test", role: "web" } });

const site = [
  "name: site",
  "description: a static site",
  "resources:",
  "  - id: root",
  "    type: directory",
  `    path: ${dir}/site-{{ attributes.hostname }}`,
  "  - id: index",
  "    type: file",
  `    path: ${dir}/site-{{ attributes.hostname }}/index.html`,
  '    content: "hello from {{ attributes.hostname }} in {{ tags.env }}\\n"',
  '    mode: "0640"',
  "    requires: [root]",
  "  - id: stamp",
  "    type: exec",
  `    command: "echo built > ${dir}/site-{{ attributes.hostname }}/stamp; echo to-stdout; echo to-stderr >&2"`,
  `    creates: ${dir}/site-{{ attributes.hostname }}/stamp`,
  "    requires: [index]",
  "",
].join("\n");

const upload = async (name: string, content: string) => {
  const r = await s.api("POST", "/modules", { name, content });
  if (r.status !== 201) throw new Error(`upload ${name}: ${r.status} ${r.text}`);
  return r.body;
};
await upload("site", site);

const run = (node: string, kind: "apply" | "plan", modules: string[], wait = 30) =>
  s.api("POST", `/agents/${node}/${kind}${wait ? `?wait=${wait}` : ""}`, { modules });

t.test(
  "plan shows what would change and touches nothing; apply does it; a second apply and plan change nothing",
  async (t) => {
    const plan = await run(web1, "plan", ["site"]);
    t.equal(plan.status, 200, "wait returns the finished operation with 200");
    t.equal(plan.body.kind, "plan");
    t.equal(plan.body.status, "succeeded");
    t.same(plan.body.summary, { ok: 0, changed: 3, failed: 0, skipped: 0, unsupported: 0 });
    const index = plan.body.results.find((r: any) => r.id === "index");
    t.match(index.diff, /^\+hello from web-1 in test$/m, "unified diff of the rendered file");
    t.notOk(existsSync(join(dir, "site-web-1")), "plan wrote nothing");

    const apply = await run(web1, "apply", ["site"]);
    t.equal(apply.body.status, "succeeded");
    t.same(apply.body.summary, { ok: 0, changed: 3, failed: 0, skipped: 0, unsupported: 0 });
    t.equal(readFileSync(join(dir, "site-web-1/index.html"), "utf8"), "hello from web-1 in test\n");
    t.equal(readFileSync(join(dir, "site-web-1/stamp"), "utf8"), "built\n", "exec ran");
    t.same(
      apply.body.results.map((r: any) => [r.id, r.status]),
      [
        ["root", "changed"],
        ["index", "changed"],
        ["stamp", "changed"],
      ],
      "dependency order",
    );
    t.ok(apply.body.results.find((r: any) => r.id === "stamp").has_output);

    const output = await s.api("GET", `/agents/${web1}/state/operations/${apply.body.id}/output`);
    t.equal(output.status, 200);
    t.same(output.body.outputs, [{ id: "stamp", module: "site", stdout: "to-stdout\n", stderr: "to-stderr\n" }]);

    const again = await run(web1, "apply", ["site"]);
    t.same(
      again.body.summary,
      { ok: 3, changed: 0, failed: 0, skipped: 0, unsupported: 0 },
      "second apply: zero changes",
    );
    const replan = await run(web1, "plan", ["site"]);
    t.same(
      replan.body.summary,
      { ok: 3, changed: 0, failed: 0, skipped: 0, unsupported: 0 },
      "second plan: nothing to change",
    );

    const believed = await s.api("GET", `/agents/web-1/state`);
    t.equal(believed.status, 200);
    t.equal(believed.body.node_id, web1, "the agent's name resolves to its node id");
    t.same(
      believed.body.resources.map((r: any) => [r.module, r.id, r.type, r.operation_id]),
      [
        ["site", "index", "file", again.body.id],
        ["site", "root", "directory", again.body.id],
        ["site", "stamp", "exec", again.body.id],
      ],
    );
    t.equal(believed.body.resources[0].observed.mode, "0640", "what the agent observed");

    await t.resolves(async () => {
      const succeeded = await s.events("state.apply.succeeded");
      t.ok(succeeded.some((e) => e.metadata?.operation_id === apply.body.id && e.target?.id === web1));
      t.ok((await s.events("state.plan.completed")).some((e) => e.metadata?.operation_id === plan.body.id));
    });
  },
);

t.test("without wait the answer is 202 with the pending or running operation; the detail follows", async (t) => {
  const r = await run(web1, "plan", ["site"], 0);
  t.ok(["pending", "running", "succeeded"].includes(r.body.status));
  // A plan can finish before the answer is written (an idle agent is quick): then it is 200, as documented.
  t.equal(r.status, r.body.status === "succeeded" ? 200 : 202, `${r.body.status} → ${r.status}`);
  let detail: Awaited<ReturnType<typeof s.api>> | undefined;
  for (let i = 0; i < 100; i++) {
    detail = await s.api("GET", `/state/operations/${r.body.id}`);
    if (detail.body.status === "succeeded") break;
    await new Promise((res) => setTimeout(res, 50));
  }
  t.equal(detail!.body.status, "succeeded");
  t.equal(detail!.body.results.length, 3);
});

t.test("operations are listed newest first, paginated and filtered", async (t) => {
  const all = await s.api("GET", `/agents/${web1}/state/operations`);
  t.equal(all.status, 200);
  const ids = all.body.operations.map((o: any) => o.id);
  t.same(ids, [...ids].sort().reverse(), "newest first");
  t.notOk("results" in all.body.operations[0], "lists carry no results");
  const p1 = await s.api("GET", `/state/operations?limit=2`);
  t.equal(p1.body.operations.length, 2);
  t.equal(p1.body.has_more, true);
  const p2 = await s.api("GET", `/state/operations?limit=2&cursor=${p1.body.next_cursor}`);
  t.ok(p2.body.operations[0].id < p1.body.operations[1].id, "the next page continues after the cursor");
  const plans = await s.api("GET", `/state/operations?kind=plan&node_id=web-1`);
  t.ok(plans.body.operations.length >= 2);
  t.ok(plans.body.operations.every((o: any) => o.kind === "plan" && o.node_id === web1));
  t.equal((await s.api("GET", `/state/operations?status=bogus`)).body.code, "invalid_request");
  t.equal(
    (await s.api("GET", `/agents/${web2}/state/operations/${ids[0]}`)).status,
    404,
    "another agent's operation is not found under this agent",
  );
});

t.test(
  "refusals: unknown agent or module 404, unapproved agent 409, bad input 400 — and nothing is created",
  async (t) => {
    const before = (await s.api("GET", "/state/operations?limit=500")).body.operations.length;
    const pending = await s.addAgent({ name: "new-1", status: "pending" });
    const cases: Array<[string, string, unknown, number, string]> = [
      ["POST", `/agents/${"0".repeat(32)}/apply`, { modules: ["site"] }, 404, "agent_not_found"],
      ["POST", `/agents/${web1}/apply`, { modules: ["nope"] }, 404, "module_not_found"],
      ["POST", `/agents/${pending}/plan`, { modules: ["site"] }, 409, "agent_not_approved"],
      ["POST", `/agents/${web1}/apply`, { modules: [] }, 400, "invalid_request"],
      ["POST", `/agents/${web1}/apply`, {}, 400, "invalid_request"],
      ["POST", `/agents/${web1}/apply?wait=301`, { modules: ["site"] }, 400, "invalid_request"],
    ];
    for (const [method, path, body, status, code] of cases) {
      const r = await s.api(method, path, body);
      t.equal(r.status, status, `${path} → ${status}`);
      t.equal(r.body.code, code);
      t.match(r.type, /problem\+json/);
    }
    t.equal(
      (await s.api("GET", "/state/operations?limit=500")).body.operations.length,
      before,
      "no operation was created",
    );
  },
);

t.test("a disconnected agent gets an unreachable operation at once", async (t) => {
  const offline = await s.addAgent({ name: "offline-1", tags: { env: "test" }, serve: false });
  // Finished within the request's wait (200, not 202) and as unreachable: the agents service's
  // answer ended it, not the operation's timeout, which would say timed_out.
  const r = await run(offline, "apply", ["site"]);
  t.equal(r.status, 200, "finished while the request waited");
  t.equal(r.body.status, "unreachable");
  t.equal(r.body.error_code, "agent_unreachable");
  const failed = await s.events("state.apply.failed");
  t.ok(
    failed.some((e) => e.metadata?.operation_id === r.body.id && e.metadata?.status === "unreachable"),
    "state.apply.failed for unreachable",
  );
});

t.test("a failed resource skips its dependents and fails the operation", async (t) => {
  await upload(
    "broken",
    [
      "name: broken",
      "resources:",
      "  - { id: boom, type: exec, command: 'echo oops >&2; exit 3' }",
      `  - { id: after, type: file, path: '${dir}/never', content: x, requires: [boom] }`,
      `  - { id: independent, type: file, path: '${dir}/independent', content: y }`,
      "",
    ].join("\n"),
  );
  const r = await run(web1, "apply", ["broken"]);
  t.equal(r.body.status, "failed");
  t.same(r.body.summary, { ok: 0, changed: 1, failed: 1, skipped: 1, unsupported: 0 });
  const by = Object.fromEntries(r.body.results.map((x: any) => [x.id, x]));
  t.equal(by.boom.status, "failed");
  t.match(by.boom.message, /exited with code 3/);
  t.equal(by.after.status, "skipped");
  t.notOk(existsSync(join(dir, "never")), "the dependent did not run");
  t.ok(existsSync(join(dir, "independent")), "independent resources still run");
  const out = await s.api("GET", `/state/operations/${r.body.id}`);
  t.equal(out.body.status, "failed");
  const believed = await s.api("GET", `/agents/${web1}/state`);
  t.notOk(
    believed.body.resources.some((b: any) => b.module === "broken"),
    "a failed apply changes no believed state",
  );
});

t.test("a missing attribute or tag fails the operation before anything is sent", async (t) => {
  await upload(
    "needs-tag",
    [
      "name: needs-tag",
      "resources:",
      `  - { id: f, type: file, path: '${dir}/needs-tag', content: '{{ tags.datacenter }}' }`,
      "",
    ].join("\n"),
  );
  const r = await run(web1, "apply", ["needs-tag"]);
  t.equal(r.body.status, "failed");
  t.equal(r.body.error_code, "template_error");
  t.match(r.body.error, /no tag 'datacenter'/);
  t.equal(r.body.started_at, null, "never sent to the agent");
  t.notOk(existsSync(join(dir, "needs-tag")));
});

t.test("a restricted secret renders for the allowed agent only; its value is stored nowhere", async (t) => {
  const value = "Pa55-w0rd-only-for-web-1";
  await s.createSecret("db_password", value, { nodeIds: [web1] });
  await upload(
    "creds",
    [
      "name: creds",
      "resources:",
      "  - id: conf",
      "    type: file",
      `    path: ${dir}/creds-{{ attributes.hostname }}.conf`,
      '    content: "password={{ secrets.db_password }}\\n"',
      `  - { id: show, type: exec, command: 'cat ${dir}/creds-{{ attributes.hostname }}.conf', requires: [conf] }`,
      "",
    ].join("\n"),
  );

  const plan = await run(web1, "plan", ["creds"]);
  t.equal(plan.body.status, "succeeded");
  t.match(plan.body.results[0].diff, /^content \(none\) -> \d+ bytes \(not shown: /m, "the plan's diff is sealed");
  t.notOk(existsSync(join(dir, "creds-web-1.conf")));

  const ok = await run(web1, "apply", ["creds"]);
  t.equal(ok.body.status, "succeeded");
  t.equal(
    readFileSync(join(dir, "creds-web-1.conf"), "utf8"),
    `password=${value}\n`,
    "the allowed agent got the value",
  );
  const output = await s.api("GET", `/agents/${web1}/state/operations/${ok.body.id}/output`);
  t.equal(output.body.outputs[0].stdout, "password=***\n", "captured output is masked");

  const refused = await run(web2, "apply", ["creds"]);
  t.equal(refused.body.status, "failed");
  t.equal(refused.body.error_code, "secret_not_permitted");
  t.equal(refused.body.started_at, null, "nothing was sent to the agent");
  t.notOk(existsSync(join(dir, "creds-web-2.conf")), "nothing written");

  const drift = await s.api("POST", `/agents/${web1}/drift?wait=30`);
  t.equal(drift.body.drift.drifted, false, "the snapshot re-renders the secret for the drift check");

  const dump = await s.dumpStateSchema();
  t.ok(dump.includes("creds"), "the dump covers the state schema");
  t.notOk(dump.includes(value), "the value is in no stored operation, plan, output, snapshot or record");
  const responses = [
    plan,
    ok,
    refused,
    output,
    drift,
    await s.api("GET", `/state/operations/${ok.body.id}`),
    await s.api("GET", `/agents/${web1}/state`),
  ];
  t.notOk(
    responses.some((r) => r.text.includes(value)),
    "nor in any response",
  );
  const events = [
    ...(await s.events("state.apply.succeeded")),
    ...(await s.events("state.apply.failed")),
    ...(await s.events("state.plan.completed")),
  ];
  t.notOk(JSON.stringify(events).includes(value), "nor in any event");
});
