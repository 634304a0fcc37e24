import t from "tap";
import { OrchError } from "@orch/kit";
import { ADMIN } from "./harness.js";
import { startSourcesStack } from "./sources-sync-harness.js";

// A git source's values/<name>.yaml synced like modules and assignments on the real stack (git over
// smart HTTP, Postgres, NATS): created, replaced and removed with the source, origins naming the
// file's lines, files refused with their line and nothing applied, sets owned elsewhere refused.
const x = await startSourcesStack(t);
const { s, sync } = x;
const rpc = s.stateRpc;
const web = await s.addAgent({ name: "web-1", tags: { role: "web", env: "prod" } });

const repo = await x.repo("fleet");
const server = await x.server();
await x.addSource("fleet", server.url("fleet"));

const reason = (p: Promise<unknown>) =>
  p.then(
    () => "ok",
    (e: unknown) => (e instanceof OrchError ? e.reason : String(e)),
  );

t.test("a sync creates value sets owned by the source; origins name the file's lines", async (t) => {
  await repo.write("values/defaults.yaml", "values:\n  port: 80\n  upstreams: [a]\n");
  await repo.write(
    "values/prod.yaml",
    "selector: env=prod\npriority: 10\ndescription: production\nvalues:\n  # the prod pool\n  upstreams:\n    - p1\n    - p2\n",
  );
  const c1 = await repo.commit("values");
  await sync.sync("fleet", x.manual);
  t.same((await x.row("fleet")).errors, []);
  const prod = await rpc.getValueSet({ name: "prod" }, { actor: ADMIN });
  t.match(prod, { selector: "env=prod", priority: 10, description: "production", source: "fleet", commit: c1 });
  const merged = await rpc.getAgentValues({ nodeId: web }, { actor: ADMIN });
  t.same(merged.values, { port: 80, upstreams: ["p1", "p2"] });
  const up = merged.keys.find((k) => k.path === "upstreams")!;
  t.match(up.origin, { set: "prod", line: 6 });
  t.match(up.overridden, [{ set: "defaults", line: 3 }]);

  t.equal(
    await reason(rpc.putValueSet({ name: "prod", selector: "*", priority: 1, content: "a: 1\n" }, { actor: ADMIN })),
    "managed_by_source",
  );
  t.equal(await reason(rpc.deleteValueSet({ name: "prod" }, { actor: ADMIN })), "managed_by_source");
});

t.test("a bad file is refused with its line and nothing of the commit is applied", async (t) => {
  await repo.write("values/prod.yaml", "selector: env=prod\npriority: 10\nvalues:\n  upstreams: [p9]\n");
  await repo.write("values/leaky.yaml", "selector: '*'\npriority: 1\nvalues:\n  db:\n    pw: '{{ secrets.db }}'\n");
  await repo.commit("bad");
  await sync.sync("fleet", x.manual);
  const row = await x.row("fleet");
  t.equal(row.status, "error");
  t.match(row.errors, [{ file: "values/leaky.yaml", line: 5, code: "secret_in_values" }]);
  const prod = await rpc.getValueSet({ name: "prod" }, { actor: ADMIN });
  t.same(prod.values, { upstreams: ["p1", "p2"] }, "the previous commit's set stands");
});

t.test("a set made through the API is not taken over; a removed file deletes its set", async (t) => {
  await rpc.putValueSet({ name: "mine", selector: "*", priority: 2, content: "x: 1\n" }, { actor: ADMIN });
  await repo.remove("values/leaky.yaml");
  await repo.write("values/mine.yaml", "selector: '*'\npriority: 2\nvalues:\n  x: 2\n");
  await repo.commit("conflict");
  await sync.sync("fleet", x.manual);
  t.match((await x.row("fleet")).errors, [{ file: "values/mine.yaml", code: "managed_by_source" }]);

  await repo.remove("values/mine.yaml");
  await repo.remove("values/defaults.yaml");
  const c = await repo.commit("fixed");
  await sync.sync("fleet", x.manual);
  t.match(await x.row("fleet"), { status: "ok", commit: c });
  t.equal(await reason(rpc.getValueSet({ name: "defaults" }, { actor: ADMIN })), "value_set_not_found");
  t.same((await rpc.getValueSet({ name: "prod" }, { actor: ADMIN })).values, { upstreams: ["p9"] });
  t.equal((await rpc.getValueSet({ name: "mine" }, { actor: ADMIN })).source, "");
});
