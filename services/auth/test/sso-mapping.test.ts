import t from "tap";
import {
  ClaimsError,
  mapClaims,
  nameCandidates,
  operatorNameBase,
  parseClaims,
  type MappingRule,
} from "../src/sso/mapping.js";

const rule = (r: Partial<MappingRule>): MappingRule => ({
  name: "",
  groups: [],
  email: "",
  domains: [],
  role: "operator",
  agent_selector: "",
  ...r,
});
const policy = (rules: MappingRule[], allowedDomains: string[] = []) => ({
  groupsClaim: "groups",
  allowedDomains,
  rules,
});

t.test("claims are type-checked strictly", async (t) => {
  const ok = parseClaims({ sub: "u1", email: "a@x.io", groups: ["g"], preferred_username: "ann", sid: "s" }, "groups");
  t.same(ok, { sub: "u1", email: "a@x.io", groups: ["g"], preferredUsername: "ann", sid: "s" });
  t.same(parseClaims({ sub: "u1" }, "groups").groups, [], "an absent groups claim is no groups");
  t.same(parseClaims({ sub: "u", realm: { roles: ["r"] } }, "realm.roles").groups, ["r"], "a dotted path");
  for (const [claims, why] of [
    [{}, "no sub"],
    [{ sub: "" }, "empty sub"],
    [{ sub: 42 }, "numeric sub"],
    [{ sub: "u", groups: "admins" }, "groups a string"],
    [{ sub: "u", groups: ["a", 1] }, "groups with a number"],
    [{ sub: "u", email: ["a@x"] }, "email a list"],
    [{ sub: "u", email_verified: "yes" }, "email_verified not a boolean"],
  ] as const) {
    t.throws(() => parseClaims(claims as Record<string, unknown>, "groups"), ClaimsError, why);
  }
});

t.test("rules: first whose every condition holds wins", async (t) => {
  const rules = [
    rule({ name: "admins", groups: ["ops-admin"], role: "admin", agent_selector: "ignored" }),
    rule({ name: "web", groups: ["web", "www"], domains: ["Example.com"], agent_selector: "role=web" }),
    rule({ email: "*@contractors.io", agent_selector: "env=dev" }),
  ];
  const c = (x: Record<string, unknown>) => parseClaims({ sub: "s", ...x }, "groups");
  t.match(mapClaims(c({ groups: ["ops-admin"] }), policy(rules)), {
    matched: true,
    ruleIndex: 0,
    ruleName: "admins",
    role: "admin",
    agentSelector: "",
  });
  t.match(mapClaims(c({ groups: ["www"], email: "a@EXAMPLE.com" }), policy(rules)), {
    matched: true,
    ruleIndex: 1,
    agentSelector: "role=web",
  });
  t.match(mapClaims(c({ groups: ["www"], email: "a@other.com" }), policy(rules)), { matched: false, ruleIndex: -1 });
  t.match(mapClaims(c({ email: "bob@contractors.io" }), policy(rules)), {
    matched: true,
    ruleIndex: 2,
    ruleName: "rule 3",
  });
  t.match(mapClaims(c({ email: "bob@contractors.io.evil" }), policy(rules)), { matched: false });
  t.match(mapClaims(c({}), policy([])), { matched: false, reason: /no mapping rules/ });
});

t.test("allowed domains need a verified email in the list", async (t) => {
  const p = policy([rule({})], ["example.com"]);
  const c = (x: Record<string, unknown>) => parseClaims({ sub: "s", ...x }, "groups");
  t.equal(mapClaims(c({ email: "a@example.com" }), p).matched, true);
  t.match(mapClaims(c({ email: "a@example.com", email_verified: false }), p), {
    matched: false,
    reason: /not verified/,
  });
  t.match(mapClaims(c({ email: "a@evil.com" }), p), { matched: false, reason: /not allowed/ });
  t.match(mapClaims(c({}), p), { matched: false, reason: /email is required/ });
});

t.test("operator names follow the name rule", async (t) => {
  t.equal(operatorNameBase(parseClaims({ sub: "1", preferred_username: "Ann.Lee" }, "g")), "ann.lee");
  t.equal(operatorNameBase(parseClaims({ sub: "1", email: "Bob+x@corp.io" }, "g")), "bob-x");
  t.equal(operatorNameBase(parseClaims({ sub: "AbC|123" }, "g")), "sso-abc-123");
  t.equal(operatorNameBase(parseClaims({ sub: "1", preferred_username: "__" }, "g")), "sso-1");
  t.ok(operatorNameBase(parseClaims({ sub: "x".repeat(200) }, "g")).length <= 63);
  t.same(nameCandidates("ann", 3), ["ann", "ann-2", "ann-3"]);
});
