import t from "tap";
import type { MappingRule } from "../src/sso/mapping.js";
import { initialState, step, type Check, type RefreshEvent, type RefreshState } from "../src/sso/refresher-machine.js";

const rules: MappingRule[] = [
  { name: "web", groups: ["web"], email: "", domains: [], role: "operator", agent_selector: "role=web" },
  { name: "db", groups: ["db"], email: "", domains: [], role: "operator", agent_selector: "role=db" },
];
const check = (o: Partial<Check> = {}): Check => ({
  operatorId: "op1",
  operatorName: "ann",
  provider: "corp",
  subject: "ann",
  role: "operator",
  agentSelector: "role=web",
  hasRefreshToken: true,
  checkedAt: 0,
  unreachableSince: null,
  policy: { groupsClaim: "groups", allowedDomains: [], rules },
  intervalMs: 2000,
  graceMs: 10_000,
  ...o,
});
const run = (c: Check, e: RefreshEvent, now = 5000) => {
  const started = step(initialState(c), { type: "start" }, now);
  return { started, next: step(started.state, e, now) };
};
const types = (s: { effects: { type: string }[] }) => s.effects.map((e) => e.type);

t.test("start asks the provider, or ends the sessions when there is no refresh token", async (t) => {
  const s = step(initialState(check()), { type: "start" }, 1);
  t.same(types(s), ["refresh"]);
  t.equal(s.state.phase, "refreshing");
  const none = step(initialState(check({ hasRefreshToken: false })), { type: "start" }, 1);
  t.same(none.effects, [
    { type: "end_sessions", reason: "no_refresh_token" },
    { type: "count", outcome: "no_refresh_token" },
  ]);
  t.equal(none.state.phase, "done");
});

t.test("same mapping: checked, nothing revoked", async (t) => {
  const { next } = run(check(), { type: "refreshed", claims: { sub: "ann", groups: ["web"] }, refreshToken: "rt2" });
  t.same(types(next), ["checked", "count"]);
  t.match(next.effects[0], { refreshToken: "rt2", groups: ["web"] });
});

t.test("changed groups: new role and scope", async (t) => {
  const { next } = run(check(), { type: "refreshed", claims: { sub: "ann", groups: ["db"] }, refreshToken: undefined });
  t.same(types(next), ["set_access", "checked", "count"]);
  t.match(next.effects[0], { role: "operator", agentSelector: "role=db", ruleName: "db" });
  t.match(next.effects[2], { outcome: "changed" });
});

t.test("refusals deprovision", async (t) => {
  const cases: [RefreshEvent, string][] = [
    [{ type: "refused", detail: "invalid_grant" }, "refresh_refused"],
    [{ type: "refreshed", claims: { sub: "ann", groups: ["sales"] }, refreshToken: undefined }, "mapping_refused"],
    [{ type: "refreshed", claims: { sub: "ann", groups: "web" }, refreshToken: undefined }, "mapping_refused"],
    [{ type: "refreshed", claims: { sub: "bob", groups: ["web"] }, refreshToken: undefined }, "mapping_refused"],
  ];
  for (const [e, reason] of cases) {
    const { next } = run(check(), e);
    t.same(types(next), ["deprovision", "count"], reason);
    t.match(next.effects[0], { reason });
  }
});

t.test("silence: grace period, then deprovisioned", async (t) => {
  const first = run(check(), { type: "unreachable", detail: "down" }, 5000).next;
  t.same(first.effects, [
    { type: "unreachable", since: 5000 },
    { type: "count", outcome: "unreachable" },
  ]);
  const still = run(check({ unreachableSince: 5000 }), { type: "failed", detail: "bad token" }, 14_999).next;
  t.same(types(still), ["unreachable", "count"]);
  const over = run(check({ unreachableSince: 5000 }), { type: "unreachable", detail: "down" }, 15_000).next;
  t.match(over.effects[0], { type: "deprovision", reason: "provider_unreachable" });
});

t.test("events out of order change nothing", async (t) => {
  const done: RefreshState = { phase: "done", check: check() };
  t.same(step(done, { type: "refused", detail: "" }, 1).effects, []);
  t.same(step(initialState(check()), { type: "refused", detail: "" }, 1).effects, [], "no answer before asking");
});

t.test("no claims on refresh: checked without re-mapping", async (t) => {
  const { next } = run(check(), { type: "refreshed", claims: null, refreshToken: "rt" });
  t.same(types(next), ["checked", "count"]);
  t.match(next.effects[0], { mapping: null });
});
