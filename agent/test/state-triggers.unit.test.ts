import t from "tap";
import { create } from "@bufbuild/protobuf";
import { ExecuteRequestSchema, type ResourceResult } from "@orch/contracts";
import { AgentError } from "../src/runtime.js";
import { createExecute } from "../src/state/execute.js";
import { decide, listKeys, type Status } from "../src/state/triggers.js";
import type { Provider, ProviderContext, Spec } from "../src/state/types.js";

// The decisions onchanges / triggered_by make, first as the pure function, then through Execute
// with fake providers (the real service manager is proven in state-sysv.test.ts).

const statuses = (o: Record<string, Status>) => new Map(Object.entries(o));
const node = (o: { type?: string; onchanges?: string[]; triggeredBy?: string[] }) => ({
  key: "m/x",
  type: o.type ?? "service",
  onchanges: o.onchanges ?? [],
  triggeredBy: o.triggeredBy ?? [],
});

t.test("unit: decide — onchanges runs only after a change; a failed trigger skips", async (t) => {
  const n = node({ type: "exec", onchanges: ["m/a", "m/b"] });
  t.same(decide(n, statuses({ "m/a": "ok", "m/b": "changed" }), "apply"), { run: true });
  t.same(decide(n, statuses({ "m/a": "ok", "m/b": "ok" }), "apply"), {
    run: false,
    status: "ok",
    message: "not run: none of m/a and m/b changed",
  });
  t.same(decide(n, statuses({ "m/a": "ok", "m/b": "ok" }), "plan"), {
    run: false,
    status: "ok",
    message: "would not run: none of m/a and m/b would change",
  });
  t.same(decide(n, statuses({ "m/a": "changed", "m/b": "failed" }), "apply"), {
    run: false,
    status: "skipped",
    message: "skipped: onchanges m/b, which is failed",
  });
  t.same(decide(node({ type: "exec" }), statuses({}), "apply"), { run: true }, "no onchanges: runs as always");
});

t.test("unit: decide — a service refreshes on the triggers that changed, never after a failed one", async (t) => {
  const n = node({ triggeredBy: ["m/conf", "m/site", "m/key"] });
  t.same(decide(n, statuses({ "m/conf": "changed", "m/site": "changed", "m/key": "ok" }), "apply"), {
    run: true,
    refresh: ["m/conf", "m/site"],
  });
  t.same(decide(n, statuses({ "m/conf": "ok", "m/site": "ok", "m/key": "ok" }), "apply"), { run: true });
  t.same(decide(n, statuses({ "m/conf": "changed", "m/site": "failed", "m/key": "skipped" }), "apply"), {
    run: true,
    note: "not refreshed: m/site is failed and m/key is skipped",
  });
  t.same(decide(node({ type: "file", triggeredBy: ["m/a"] }), statuses({ "m/a": "changed" }), "apply"), {
    run: false,
    status: "failed",
    message: "a file resource cannot be refreshed (triggered_by is for service, systemd_unit)",
  });
  t.equal(listKeys(["a", "b", "c"]), "a, b and c");
});

/** A file-like fake: changes when its spec says so, fails when asked. */
const fake = (): Provider => ({
  check: async (spec: Spec) => ({ changed: spec.change === true, diff: spec.change ? "x\n" : "", observed: {} }),
  apply: async (spec: Spec) => ({
    changed: spec.change === true,
    failed: spec.fail === true,
    diff: "",
    message: spec.fail ? "boom" : "",
    stdout: "",
    stderr: "",
    observed: {},
  }),
});

/** A service-like fake recording the refresh it was asked for. */
function fakeService(calls: Array<{ mode: string; refresh: readonly string[] | undefined }>): Provider {
  const run = (mode: string) => async (_spec: Spec, ctx: ProviderContext) => {
    calls.push({ mode, refresh: ctx.refresh });
    const changed = Boolean(ctx.refresh);
    return {
      changed,
      diff: "",
      message: changed ? `refreshed by ${ctx.refresh!.join(",")}` : "",
      stdout: "",
      stderr: "",
      observed: {},
    };
  };
  return { check: run("plan"), apply: run("apply") };
}

const silent = { debug() {}, info() {}, warn() {}, error() {} };
interface R {
  id: string;
  type: string;
  spec?: Record<string, boolean>;
  requires?: string[];
  onchanges?: string[];
  triggeredBy?: string[];
}
function harness() {
  const calls: Array<{ mode: string; refresh: readonly string[] | undefined }> = [];
  const execute = createExecute({
    providers: { file: fake(), exec: fake(), service: fakeService(calls) },
    log: silent,
    sealed: { has: async () => false, add: async () => {}, remove: async () => {} } as never,
  });
  const run = async (mode: string, rs: R[]) => {
    const req = create(ExecuteRequestSchema, {
      mode,
      resources: rs.map((r) => ({
        id: r.id,
        module: "m",
        type: r.type,
        spec: r.spec ?? {},
        requires: r.requires ?? [],
        onchanges: r.onchanges ?? [],
        triggeredBy: r.triggeredBy ?? [],
      })),
    });
    const res = await execute(req, { deadline: Date.now() + 30_000 });
    return (res.results ?? []) as ResourceResult[];
  };
  return { run, calls };
}

const site = (a: boolean, b: boolean, fail = false): R[] => [
  // Listed first: triggered_by orders it after both triggers.
  { id: "nginx", type: "service", triggeredBy: ["m/conf", "m/site"] },
  { id: "conf", type: "file", spec: { change: a, fail } },
  { id: "site", type: "file", spec: { change: b } },
  { id: "reindex", type: "exec", spec: { change: true }, onchanges: ["site"] },
];

t.test("unit: execute — one refresh after every trigger, with the triggers that changed", async (t) => {
  const h = harness();
  const res = await h.run("apply", site(true, true));
  t.same(
    res.map((r) => [r.id, r.status]),
    [
      ["conf", "changed"],
      ["site", "changed"],
      ["nginx", "changed"],
      ["reindex", "changed"],
    ],
    "the service runs after both of its triggers",
  );
  t.same(h.calls, [{ mode: "apply", refresh: ["m/conf", "m/site"] }], "asked to refresh once, naming both");
  t.equal(res[2]!.message, "refreshed by m/conf,m/site");
});

t.test("unit: execute — no change refreshes nothing and runs no onchanges resource", async (t) => {
  const h = harness();
  const res = await h.run("apply", site(false, false));
  t.same(h.calls, [{ mode: "apply", refresh: undefined }], "the service is enforced, not refreshed");
  const reindex = res.find((r) => r.id === "reindex")!;
  t.same([reindex.status, reindex.changed, reindex.message], ["ok", false, "not run: none of m/site changed"]);
});

t.test("unit: execute — a failed trigger: no refresh, and the service says why", async (t) => {
  const h = harness();
  const res = await h.run("apply", site(true, true, true));
  t.same(h.calls, [{ mode: "apply", refresh: undefined }]);
  const nginx = res.find((r) => r.id === "nginx")!;
  t.same([nginx.status, nginx.message], ["ok", "not refreshed: m/conf is failed"]);
});

t.test("unit: execute — a plan asks the same question with would-change statuses", async (t) => {
  const h = harness();
  await h.run("plan", site(false, true));
  t.same(h.calls, [{ mode: "plan", refresh: ["m/site"] }]);
});

t.test("unit: execute — onchanges and triggered_by name resources in the request, without cycles", async (t) => {
  const h = harness();
  const reasonOf = (p: Promise<unknown>) =>
    p.then(
      () => "none",
      (e: unknown) => (e instanceof AgentError ? e.reason : String(e)),
    );
  t.equal(await reasonOf(h.run("apply", [{ id: "a", type: "exec", onchanges: ["m/ghost"] }])), "unknown_requires");
  t.equal(
    await reasonOf(
      h.run("apply", [
        { id: "a", type: "exec", onchanges: ["b"] },
        { id: "b", type: "service", triggeredBy: ["a"] },
      ]),
    ),
    "cyclic_requires",
  );
});
