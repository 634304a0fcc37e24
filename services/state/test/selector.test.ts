import t from "tap";
import { matchSelector, parseSelector, SelectorError, type SelectorTarget } from "@orch/contracts";

// Unit tests of the pure selector grammar (docs/modules.md#selectors).
const agent = (
  name: string,
  tags: Record<string, string>,
  attributes: Record<string, string> = {},
  node_id = `n-${name}`,
): SelectorTarget => ({ name, node_id, tags, attributes });
const fleet = [
  agent("web-1", { env: "test", role: "web", tier: "front" }, { os: "linux", arch: "x86_64" }),
  agent("web-2", { env: "prod", role: "web" }, { os: "linux", arch: "aarch64" }),
  agent("db-1", { env: "test", role: "db" }, { os: "freebsd" }),
  agent("cache-1", { env: "test", role: "cache", legacy: "" }, { os: "linux" }),
];
const names = (sel: string) => fleet.filter((a) => matchSelector(parseSelector(sel), a)).map((a) => a.name);

t.test("every operator", async (t) => {
  t.same(names("*"), ["web-1", "web-2", "db-1", "cache-1"], "* is everything");
  t.same(names("env=test"), ["web-1", "db-1", "cache-1"], "=");
  t.same(names("env==test"), ["web-1", "db-1", "cache-1"], "== is =");
  t.same(names("env!=test"), ["web-2"], "!=");
  t.same(names("tier!=front"), ["web-2", "db-1", "cache-1"], "!= holds when the key is absent");
  t.same(names("role in (web,db)"), ["web-1", "web-2", "db-1"], "in");
  t.same(names("role notin (web, db)"), ["cache-1"], "notin");
  t.same(names("tier notin (front)"), ["web-2", "db-1", "cache-1"], "notin holds when the key is absent");
  t.same(names("tier"), ["web-1"], "exists");
  t.same(names("legacy"), ["cache-1"], "exists with an empty value");
  t.same(names("!tier"), ["web-2", "db-1", "cache-1"], "absent");
  t.same(names("env=test,role in (web,db)"), ["web-1", "db-1"], "terms are ANDed");
  t.same(names(" env = test , role in ( web , db ) "), ["web-1", "db-1"], "whitespace is free");
  t.same(names("env=test,!tier,role!=db"), ["cache-1"]);
});

t.test("globs", async (t) => {
  t.same(names("role=w*"), ["web-1", "web-2"]);
  t.same(names("env=*"), ["web-1", "web-2", "db-1", "cache-1"]);
  t.same(names("role in (d*, c*e)"), ["db-1", "cache-1"]);
  t.same(names("role notin (*e*)"), ["db-1"]);
  t.same(names("role!=*b"), ["cache-1"]);
  t.same(names("name=web-.*"), [], "only * is special; . is literal");
});

t.test("reserved keys: name, node_id, attr.<attribute>", async (t) => {
  t.same(names("name=db-1"), ["db-1"]);
  t.same(names("name in (web-*, cache-1)"), ["web-1", "web-2", "cache-1"]);
  t.same(names("node_id=n-web-2"), ["web-2"]);
  t.same(names("attr.os=linux"), ["web-1", "web-2", "cache-1"]);
  t.same(names("attr.arch"), ["web-1", "web-2"]);
  t.same(names("!attr.arch"), ["db-1", "cache-1"]);
  t.same(names("attr.os=linux,attr.arch=aarch64"), ["web-2"]);
  const tagged = agent("x", { name: "tag-called-name" });
  t.ok(matchSelector(parseSelector("name=x"), tagged), "name is the agent name, never a tag");
  t.notOk(matchSelector(parseSelector("name=tag-called-name"), tagged));
});

t.test("parse errors carry the position of the problem", async (t) => {
  const cases: Array<[string, number, RegExp]> = [
    ["", 0, /empty selector/],
    ["   ", 3, /empty selector/],
    ["env=", 4, /expected a value/],
    ["env=test,", 9, /expected a key/],
    ["env=test,,role=web", 9, /expected a key/],
    ["role in web", 8, /expected '\('/],
    ["role in (web", 12, /expected '\)'/],
    ["role in (web db)", 13, /expected ',' or '\)'/],
    ["role in ()", 9, /expected a value/],
    ["env=test role=web", 9, /expected ',' or the end/],
    ["env>3", 3, /expected '=', '!=', 'in', 'notin'/],
    ["*,env=test", 0, /'\*' must be the whole selector/],
    ["env=test,*", 9, /expected a key/],
    ["!", 1, /expected a key/],
    ["-bad=1", 0, /expected a key|invalid key/],
    ["attr.=x", 0, /invalid key/],
  ];
  for (const [text, position, message] of cases) {
    try {
      parseSelector(text);
      t.fail(`'${text}' should not parse`);
    } catch (err) {
      t.type(err, SelectorError, text);
      t.equal((err as SelectorError).position, position, `'${text}' fails at ${position}`);
      t.match((err as Error).message, message, text);
      t.match((err as Error).message, new RegExp(`at position ${position}$`));
    }
  }
});

t.test("parsed form", async (t) => {
  t.same(parseSelector("env=test,role in (web,db),!old").terms, [
    { op: "eq", key: "env", value: "test" },
    { op: "in", key: "role", values: ["web", "db"] },
    { op: "absent", key: "old" },
  ]);
  t.same(parseSelector(" * ").all, true);
  t.same(parseSelector("k notin (a)").terms, [{ op: "notin", key: "k", values: ["a"] }]);
  t.same(
    parseSelector("index=1").terms,
    [{ op: "eq", key: "index", value: "1" }],
    "a key starting with 'in' is not the in operator",
  );
  t.same(parseSelector("k in(a)").terms, [{ op: "in", key: "k", values: ["a"] }]);
});

t.test("glob matching is literal apart from *", async (t) => {
  const { globMatch } = await import("@orch/contracts");
  const cases: Array<[string, string, boolean]> = [
    ["web", "web", true],
    ["web", "web1", false],
    ["w*", "web", true],
    ["*b", "web", true],
    ["*", "", true],
    ["a*b*c", "abc", true],
    ["a*b*c", "aXbYc", true],
    ["a*b*c", "acb", false],
    ["ab*ba", "aba", false],
    ["a.c", "abc", false],
    ["(x)*", "(x)y", true],
    ["*.*", "a.b", true],
    ["**", "anything", true],
  ];
  for (const [p, v, want] of cases) t.equal(globMatch(p, v), want, `${p} ~ ${v}`);
});
