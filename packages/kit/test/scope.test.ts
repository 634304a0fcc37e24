import t from "tap";
import { joinScopes, splitScope } from "@orch/contracts";
import { inScope, isScoped, SYSTEM_ACTOR, type Actor } from "../src/index.js";

const op = (scope?: string): Actor => ({
  id: "o1",
  name: "wendy",
  type: "operator",
  role: "operator",
  ...(scope === undefined ? {} : { scope }),
});
const web = { node_id: "a".repeat(32), name: "web-1", tags: { role: "web" }, attributes: { os: "linux" } };
const pending = { node_id: "b".repeat(32), name: "", tags: {}, attributes: { os: "linux" } };

t.test("unscoped actors reach every agent", async (t) => {
  for (const a of [SYSTEM_ACTOR, op(), op("")]) {
    t.notOk(isScoped(a));
    t.ok(inScope(a, web));
    t.ok(inScope(a, pending));
  }
});

t.test("a selector limits the reach; pending agents have no tags", async (t) => {
  t.ok(isScoped(op("role=web")));
  t.ok(inScope(op("role=web"), web));
  t.notOk(inScope(op("role=web"), pending));
  t.notOk(inScope(op("role=db"), web));
  t.ok(inScope(op("attr.os=linux"), pending), "attributes can match a pending agent");
  t.ok(inScope(op("name=web-*"), web));
});

t.test("a scope that does not parse reaches nothing (default-deny)", async (t) => {
  t.notOk(inScope(op("role=("), web));
  t.notOk(inScope(op("role=("), pending));
});

t.test("a scope with granted selectors reaches what any of them matches", async (t) => {
  const db = { node_id: "c".repeat(32), name: "db-1", tags: { role: "db" }, attributes: {} };
  const both = op(joinScopes("role=web", ["role=db"]));
  t.equal(both.scope, "role=web || role=db");
  t.ok(inScope(both, web));
  t.ok(inScope(both, db));
  t.notOk(inScope(both, pending));
  t.notOk(inScope(op("role=web || role=("), web), "one bad alternative refuses all: never widened");
  t.equal(joinScopes("", ["role=db"]), "", "an unscoped operator stays unscoped");
  t.equal(joinScopes("role=web", ["*"]), "", "a `*` grant is every agent");
  t.equal(joinScopes("role=web", ["role=web", " "]), "role=web", "duplicates and blanks drop");
  t.same(splitScope(" a=b ||c=d|| "), ["a=b", "c=d"]);
});
