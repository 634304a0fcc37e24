import t from "tap";
import { AgentError } from "../src/runtime.js";
import { masker, maskJson } from "../src/state/mask.js";
import { topoOrder } from "../src/state/order.js";
import { optInt, optMode, onlyKeys, optBool } from "../src/state/spec.js";

const n = (key: string, ...requires: string[]) => ({ key, requires });

t.test("unit: topoOrder puts requirements first and otherwise keeps request order", async (t) => {
  const order = topoOrder([n("m/c", "m/b"), n("m/a"), n("m/b", "m/a"), n("m/d")]).map((x) => x.key);
  t.same(order, ["m/a", "m/b", "m/c", "m/d"]);
  t.same(
    topoOrder([n("x/1"), n("x/2"), n("x/3")]).map((x) => x.key),
    ["x/1", "x/2", "x/3"],
  );
});

t.test("unit: topoOrder rejects cycles, self-requires, unknown requires and duplicates", async (t) => {
  const reason = (f: () => unknown) => {
    try {
      f();
      return "none";
    } catch (e) {
      t.type(e, AgentError);
      t.equal((e as AgentError).code, "INVALID_ARGUMENT");
      return (e as AgentError).reason;
    }
  };
  t.equal(
    reason(() => topoOrder([n("m/a", "m/b"), n("m/b", "m/c"), n("m/c", "m/a"), n("m/d")])),
    "cyclic_requires",
  );
  t.equal(
    reason(() => topoOrder([n("m/a", "m/a")])),
    "cyclic_requires",
  );
  t.equal(
    reason(() => topoOrder([n("m/a", "m/zz")])),
    "unknown_requires",
  );
  t.equal(
    reason(() => topoOrder([n("m/a"), n("m/a")])),
    "duplicate_resource",
  );
});

t.test("unit: masker replaces every occurrence, longest first, and multi-line secrets line by line", async (t) => {
  const m = masker(["hunter2", "hunter2-extended", ""]);
  t.equal(m("a hunter2 b hunter2-extended c"), "a *** b *** c");
  t.equal(m("nothing here"), "nothing here");
  const pem = "-----BEGIN KEY-----\nAAAABBBBCCCC\nDDDDEEEE\n-----END KEY-----";
  const diff = `+-----BEGIN KEY-----\n+AAAABBBBCCCC\n+DDDDEEEE\n+-----END KEY-----\n`;
  const masked = masker([pem])(diff);
  t.notMatch(masked, /AAAABBBBCCCC|DDDDEEEE/);
  t.same(maskJson({ a: ["x hunter2"], b: { c: "hunter2" }, d: 3 }, m), { a: ["x ***"], b: { c: "***" }, d: 3 });
  t.equal(masker([])("hunter2"), "hunter2");
});

t.test("unit: spec readers accept templated strings and name the bad field", async (t) => {
  t.equal(optInt({ uid: "1234" }, "uid"), 1234);
  t.equal(optInt({ uid: 1234 }, "uid"), 1234);
  t.throws(() => optInt({ uid: -1 }, "uid"), { name: "SpecError" });
  t.throws(() => optInt({ uid: 1.5 }, "uid"), /"uid"/);
  t.equal(optBool({ system: "true" }, "system"), true);
  t.equal(optMode({ mode: "0644" }), 0o644);
  t.equal(optMode({ mode: "755" }), 0o755);
  t.equal(optMode({ mode: 644 }), 0o644);
  t.throws(() => optMode({ mode: "0999" }), /"mode"/);
  t.throws(() => onlyKeys({ path: "/x", conent: "y" }, ["path", "content"]), /"conent"/);
  t.doesNotThrow(() => onlyKeys({ path: "/x", id: "a", type: "file", requires: [] }, ["path"]));
});
