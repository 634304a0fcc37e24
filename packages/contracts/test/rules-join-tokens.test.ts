import t from "tap";
import {
  checkAgentName,
  checkJoinTokenMaxUses,
  checkJoinTokenNamePrefix,
  checkJoinTokenTtl,
  hostLabel,
  joinedAgentName,
  parseJoinToken,
} from "../src/rules/index.js";

t.test("a token is ojt_<ulid>.<43 base64url>", async (t) => {
  const id = "01jab3c4d5e6f7g8h9j0k1m2n3";
  const secret = `${"A".repeat(42)}_`;
  t.same(parseJoinToken(`ojt_${id}.${secret}`), { id, secret });
  t.equal(parseJoinToken(`ojt_${id.toUpperCase()}.${secret}`), null, "upper-case id");
  t.equal(parseJoinToken(`ojt_${id}.${secret}x`), null, "long secret");
  t.equal(parseJoinToken(`ojt_${id}`), null, "no secret");
  t.equal(parseJoinToken(""), null);
});

t.test("creation limits", async (t) => {
  t.equal(checkJoinTokenTtl(3600), null);
  for (const bad of [0, 59, 1.5, 366 * 86_400]) t.equal(checkJoinTokenTtl(bad)?.reason, "invalid_ttl", String(bad));
  t.equal(checkJoinTokenMaxUses(0), null, "0 = unlimited");
  t.equal(checkJoinTokenMaxUses(-1)?.reason, "invalid_max_uses");
  t.equal(checkJoinTokenNamePrefix(""), null);
  t.equal(checkJoinTokenNamePrefix("web"), null);
  t.equal(checkJoinTokenNamePrefix("-web")?.reason, "invalid_name_prefix");
  t.equal(checkJoinTokenNamePrefix("a".repeat(33))?.reason, "invalid_name_prefix");
});

t.test("joined names are always valid agent names", async (t) => {
  t.equal(hostLabel("Web-01.example.com"), "web-01");
  t.equal(hostLabel("__"), "agent");
  t.equal(joinedAgentName("prod", "db1.example"), "prod-db1");
  t.equal(joinedAgentName("prod", "db1", 3), "prod-db1-3");
  t.equal(joinedAgentName("", "summary"), "agent-summary", "a route's own segment is qualified");
  const hexHost = "0123456789abcdef0123456789abcdef";
  t.equal(joinedAgentName("", hexHost), `agent-${hexHost}`, "a node-id-shaped name is qualified");
  for (const [prefix, host, n] of [
    ["a".repeat(32), "b".repeat(60), 12],
    ["", hexHost, 1],
    ["x", "----", 2],
    ["", "", 1],
  ] as const) {
    const name = joinedAgentName(prefix, host, n);
    t.equal(checkAgentName(name), null, `${name} is a valid agent name`);
  }
});
