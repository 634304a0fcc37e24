import t from "tap";
import { create } from "@bufbuild/protobuf";
import { ExecuteRequestSchema } from "@orch/contracts";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { AgentError } from "../src/runtime.js";
import { createExecute } from "../src/state/execute.js";
import { packageProvider } from "../src/state/providers/package.js";
import { byId, scratch, stateHarness } from "./state-harness.js";

const h = await stateHarness();
const silent = { debug() {}, info() {}, warn() {}, error() {} };

const reasonOf = async (p: Promise<unknown>) => {
  try {
    await p;
    return "none";
  } catch (e) {
    return e instanceof AgentError ? `${e.code}/${e.reason}` : `other: ${(e as Error).message}`;
  }
};

t.test("malformed requests are refused with stable reasons and run nothing", async (t) => {
  const dir = scratch(t);
  const marker = { id: "marker", type: "exec", spec: { command: `touch ${join(dir, "ran")}` } };
  t.equal(await reasonOf(h.execute("check", [marker])), "INVALID_ARGUMENT/invalid_mode");
  t.equal(
    await reasonOf(
      h.execute("apply", [
        marker,
        { id: "a", type: "exec", spec: { command: "true" }, requires: ["m/b"] },
        { id: "b", type: "exec", spec: { command: "true" }, requires: ["m/a"] },
      ]),
    ),
    "INVALID_ARGUMENT/cyclic_requires",
  );
  t.equal(
    await reasonOf(
      h.execute("apply", [marker, { id: "a", type: "exec", spec: { command: "true" }, requires: ["m/ghost"] }]),
    ),
    "INVALID_ARGUMENT/unknown_requires",
  );
  t.equal(await reasonOf(h.execute("apply", [marker, marker])), "INVALID_ARGUMENT/duplicate_resource");
  t.equal(
    await reasonOf(h.execute("apply", [marker, { id: "", type: "exec", spec: {} }])),
    "INVALID_ARGUMENT/invalid_resource",
  );
  t.throws(() => readFileSync(join(dir, "ran")), "nothing ran");
  t.same(await h.execute("plan", []), [], "an empty request is fine");
});

t.test("progress: one message per resource on orch.state.progress.<operation_id>, in execution order", async (t) => {
  h.published.length = 0;
  await h.execute(
    "apply",
    [
      { id: "b", type: "exec", spec: { command: "exit 1" }, requires: ["m/a"] },
      { id: "a", type: "exec", spec: { command: "true" } },
      { id: "c", type: "exec", spec: { command: "true" }, requires: ["m/b"] },
    ],
    { operationId: "01OPERATION" },
  );
  t.same(h.published, [
    { subject: "orch.state.progress.01OPERATION", data: { id: "a", module: "m", status: "changed", changed: true } },
    { subject: "orch.state.progress.01OPERATION", data: { id: "b", module: "m", status: "failed", changed: true } },
    { subject: "orch.state.progress.01OPERATION", data: { id: "c", module: "m", status: "skipped", changed: false } },
  ]);
  h.published.length = 0;
  await h.execute("plan", [{ id: "a", type: "exec", spec: { command: "true" } }]);
  t.same(h.published, [], "no operation id, no progress");
});

t.test("executions on one agent run one at a time", async (t) => {
  const log = join(scratch(t), "log");
  const first = h.execute("apply", [
    { id: "slow", type: "exec", spec: { command: `echo first-start >> ${log}; sleep 0.5; echo first-end >> ${log}` } },
  ]);
  const second = h.execute("apply", [{ id: "quick", type: "exec", spec: { command: `echo second >> ${log}` } }]);
  await Promise.all([first, second]);
  t.equal(readFileSync(log, "utf8"), "first-start\nfirst-end\nsecond\n");
  t.equal(await reasonOf(h.execute("nope", [])), "INVALID_ARGUMENT/invalid_mode");
  t.equal(
    (await h.execute("plan", [{ id: "after-error", type: "exec", spec: { command: "true" } }])).length,
    1,
    "a refused request does not block the queue",
  );
});

t.test("no package manager on the machine → unsupported with a clear message", async (t) => {
  const execute = createExecute({ providers: { package: packageProvider(async () => null) }, log: silent });
  const req = create(ExecuteRequestSchema, {
    mode: "plan",
    resources: [{ id: "p", module: "m", type: "package", spec: { name: "bash" } }],
  });
  const res = await execute(req, { deadline: Date.now() + 10_000 });
  const r = byId(res.results as never).p!;
  t.equal(r.status, "unsupported");
  t.match(r.message, /no supported package manager found \(apt\/dpkg, dnf\/rpm or apk\)/);
});
