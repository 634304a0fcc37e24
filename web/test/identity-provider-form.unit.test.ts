import t from "tap";
import {
  buildProviderBody,
  emptyProviderFields,
  emptyRule,
  fieldsFromProvider,
  moveRule,
  removeRule,
  splitList,
} from "../src/lib/identity-provider-form.js";

const stored = {
  name: "corp",
  display_name: "Corp SSO",
  issuer: "https://idp.example.com",
  client_id: "orch",
  scopes: ["openid", "email", "profile", "groups"],
  groups_claim: "groups",
  allowed_domains: ["example.com"],
  refresh_interval_seconds: 300,
  enabled: true,
  rules: [
    { name: "admins", groups: ["admins"], role: "admin" as const },
    {
      name: "ops",
      groups: ["ops", "sre"],
      email: "*@example.com",
      role: "operator" as const,
      agent_selector: "env=prod",
    },
  ],
};

t.test("lists are typed comma or space separated", async (t) => {
  t.same(splitList(" a, b c,,d\n"), ["a", "b", "c", "d"]);
  t.same(splitList(""), []);
});

t.test("an edit that leaves the secret blank omits client_secret (the API keeps it)", async (t) => {
  const f = fieldsFromProvider(stored);
  t.equal(f.clientSecret, "", "the form never holds a secret");
  t.equal(f.groupsClaim, "groups");
  t.equal(f.rules[1]?.groups, "ops, sre");
  const built = buildProviderBody(f, true);
  t.same(built, {
    ok: true,
    body: {
      display_name: "Corp SSO",
      issuer: "https://idp.example.com",
      client_id: "orch",
      scopes: ["openid", "email", "profile", "groups"],
      groups_claim: "groups",
      allowed_domains: ["example.com"],
      rules: [
        { name: "admins", groups: ["admins"], role: "admin" },
        { name: "ops", groups: ["ops", "sre"], email: "*@example.com", role: "operator", agent_selector: "env=prod" },
      ],
      refresh_interval_seconds: 300,
      enabled: true,
    },
  });
  t.notOk(built.ok && "client_secret" in built.body, "no client_secret key");
});

t.test("a typed secret is sent; 'clear' sends the empty string", async (t) => {
  const f = { ...fieldsFromProvider(stored), clientSecret: "s3cret" };
  const typed = buildProviderBody(f, true);
  t.equal(typed.ok && typed.body.client_secret, "s3cret");
  const cleared = buildProviderBody({ ...f, clearSecret: true }, true);
  t.equal(cleared.ok && cleared.body.client_secret, "", "clear wins over a typed value");
});

t.test("a new provider: required fields, defaults, admin rules are never scoped", async (t) => {
  t.same(buildProviderBody(emptyProviderFields(), false), { ok: false, field: "name", message: "Name is required" });
  const f = {
    ...emptyProviderFields(),
    name: "okta",
    issuer: " https://okta.example/ ",
    clientId: "cid",
    rules: [{ ...emptyRule(), role: "admin" as const, agentSelector: "env=prod", groups: "admins" }],
  };
  const built = buildProviderBody(f, false);
  t.same(built, {
    ok: true,
    body: {
      issuer: "https://okta.example/",
      client_id: "cid",
      scopes: ["openid", "email", "profile"],
      groups_claim: "groups",
      allowed_domains: [],
      rules: [{ groups: ["admins"], role: "admin" }],
      enabled: true,
    },
  });
  t.equal(buildProviderBody({ ...f, clientId: "" }, false).ok, false);
  t.same(buildProviderBody({ ...f, refreshIntervalSeconds: "1.5" }, false).ok, false);
});

t.test("rules move up and down and are removed by position; the ends do not move", async (t) => {
  const rules = ["a", "b", "c"];
  t.same(moveRule(rules, 1, -1), ["b", "a", "c"]);
  t.same(moveRule(rules, 1, 1), ["a", "c", "b"]);
  t.same(moveRule(rules, 0, -1), rules);
  t.same(moveRule(rules, 2, 1), rules);
  t.same(removeRule(rules, 1), ["a", "c"]);
  t.same(rules, ["a", "b", "c"], "the input is not changed");
});
