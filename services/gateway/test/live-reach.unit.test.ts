import t from "tap";
import { silentLogger } from "@orch/kit/testing";
import { createLiveSessions, type Credential, type EndReason, type Reach } from "../src/live-sessions.js";

// The registry's scope re-check (docs/access.md): a connection bound to agents ends when its operator
// may no longer reach one of them, with the reason saying whether the operator's scope or the agent
// changed; what prompts a check (a scope-change revocation, an agent change, a re-validation), and
// answers that come late, fail, or predate a change.

/** A scripted reach answer: whether `operator` reaches `agent` now, under `scope`. */
interface World {
  scope: Record<string, string>;
  reachable: Set<string>;
}

function setup(world: World) {
  const timers = new Map<number, { fn: () => void; at: number }>();
  let now = 1_000_000;
  let seq = 0;
  const asked: string[] = [];
  /** When set, reach answers wait for release() (a check in flight). */
  let hold: { release: () => void; wait: Promise<void> } | undefined;
  let failing = false;
  const reach = async (operatorId: string, agents: readonly string[]): Promise<Reach> => {
    asked.push(`${operatorId}:${agents.join(",")}`);
    if (hold) await hold.wait;
    if (failing) throw new Error("agents service unavailable");
    const scope = world.scope[operatorId] ?? "";
    if (!scope) return { verdict: "in", scope };
    return { verdict: agents.every((a) => world.reachable.has(`${operatorId}:${a}`)) ? "in" : "out", scope };
  };
  const live = createLiveSessions({
    clock: { now: () => now },
    log: silentLogger(),
    retryMs: 500,
    verify: async () => "valid",
    reach,
    timer: {
      set: (fn, ms) => {
        timers.set(++seq, { fn, at: now + ms });
        return seq;
      },
      clear: (h) => void timers.delete(h as number),
    },
  });
  const conn = () => {
    const ended: EndReason[] = [];
    return { ended, conn: { kind: "test", end: (r: EndReason) => ended.push(r) } };
  };
  const settle = () => new Promise((r) => setImmediate(r));
  const advance = async (ms: number) => {
    now += ms;
    for (const [id, tm] of [...timers]) {
      if (tm.at > now || !timers.has(id)) continue;
      timers.delete(id);
      tm.fn();
    }
    await settle();
  };
  const holdAnswers = () => {
    let release!: () => void;
    const wait = new Promise<void>((r) => (release = r));
    hold = { release, wait };
    return () => {
      hold = undefined;
      release();
    };
  };
  return { live, conn, asked, settle, advance, holdAnswers, setFailing: (f: boolean) => (failing = f), timers };
}

const wendy = (scope: string | undefined = "role=web"): Credential => ({
  operatorId: "wendy",
  token: "tok-w",
  expiresAt: Infinity,
  ...(scope === undefined ? {} : { scope }),
});

t.test("an agent retagged out of the scope ends only the connections concerning it", async (t) => {
  const world: World = { scope: { wendy: "role=web" }, reachable: new Set(["wendy:n1", "wendy:n2"]) };
  const { live, conn, settle } = setup(world);
  const onN1 = conn();
  const onN2 = conn();
  const noAgents = conn();
  live.bind(wendy(), onN1.conn, ["n1"]);
  live.bind(wendy(), onN2.conn, ["n2"]);
  live.bind(wendy(), noAgents.conn);
  await settle();
  t.same([onN1.ended, onN2.ended], [[], []], "all in scope at bind");

  world.reachable.delete("wendy:n1");
  live.agentChanged("n1");
  await settle();
  t.same(onN1.ended, ["agent_out_of_scope"]);
  t.same(onN2.ended, [], "another agent's connection stays");
  t.same(noAgents.ended, [], "a connection concerning no agent (the audit stream) stays");
  t.equal(live.count(), 2);
});

t.test("a scope change re-checks the operator's connections instead of ending them all", async (t) => {
  const world: World = {
    scope: { wendy: "role=web", bob: "role=web" },
    reachable: new Set(["wendy:n1", "wendy:n2", "bob:n1"]),
  };
  const { live, conn, settle } = setup(world);
  const n1 = conn();
  const n2 = conn();
  const audit = conn();
  const bobs = conn();
  live.bind(wendy(), n1.conn, ["n1"]);
  live.bind(wendy(), n2.conn, ["n2"]);
  live.bind(wendy(), audit.conn);
  live.bind({ operatorId: "bob", token: "tok-b", expiresAt: Infinity, scope: "role=web" }, bobs.conn, ["n1"]);
  await settle();

  world.scope.wendy = "role=db";
  world.reachable.delete("wendy:n1");
  live.revoke({ operatorId: "wendy", scopeChanged: true });
  await settle();
  t.same(n1.ended, ["scope_changed"], "the agent the new scope excludes");
  t.same(n2.ended, [], "an agent still in the new scope");
  t.same(audit.ended, [], "not an operator_revoked: the tokens stay valid");
  t.same(bobs.ended, [], "another operator's connection on the same agent");
});

t.test("a plain operator revocation still ends everything of the operator", async (t) => {
  const { live, conn } = setup({ scope: {}, reachable: new Set() });
  const a = conn();
  live.bind(wendy(""), a.conn, ["n1"]);
  live.revoke({ operatorId: "wendy" });
  t.same(a.ended, ["operator_revoked"]);
});

t.test("a change heard while a check is in flight is checked again", async (t) => {
  const world: World = { scope: { wendy: "role=web" }, reachable: new Set(["wendy:n1"]) };
  const { live, conn, settle, holdAnswers, asked } = setup(world);
  const a = conn();
  const release = holdAnswers();
  live.bind(wendy(), a.conn, ["n1"]); // its first check is now in flight, answering "in"
  await settle();
  world.reachable.delete("wendy:n1");
  live.agentChanged("n1");
  release();
  await settle();
  await settle();
  t.same(a.ended, ["agent_out_of_scope"], "the in-flight answer predated the retag");
  t.equal(asked.length, 2, "asked once more after the first answer");
});

t.test("an unanswered check keeps the connection and retries", async (t) => {
  const world: World = { scope: { wendy: "role=web" }, reachable: new Set(["wendy:n1"]) };
  const { live, conn, settle, advance, setFailing, asked } = setup(world);
  const a = conn();
  live.bind(wendy(), a.conn, ["n1"]);
  await settle();
  setFailing(true);
  world.reachable.delete("wendy:n1");
  live.agentChanged("n1");
  await settle();
  t.same(a.ended, [], "no answer: the connection is kept meanwhile");
  const before = asked.length;
  setFailing(false);
  await advance(500);
  await settle();
  t.ok(asked.length > before, "asked again after retryMs");
  t.same(a.ended, ["agent_out_of_scope"]);
});

t.test("a re-validation (missed broadcasts) tells a scope change from an agent change", async (t) => {
  const world: World = { scope: { wendy: "role=web" }, reachable: new Set(["wendy:n1", "wendy:n2"]) };
  const { live, conn, settle } = setup(world);
  const n1 = conn();
  live.bind(wendy(), n1.conn, ["n1"]);
  await settle();
  world.reachable.delete("wendy:n1"); // retagged; the feed message was lost
  await live.revalidateAll();
  t.same(n1.ended, ["agent_out_of_scope"], "same scope as at open: the agent changed");

  const n2 = conn();
  live.bind(wendy(), n2.conn, ["n2"]);
  await settle();
  world.scope.wendy = "role=db"; // the scope-change revocation was lost
  world.reachable.delete("wendy:n2");
  await live.revalidateAll();
  t.same(n2.ended, ["scope_changed"], "another scope than at open: the scope changed");
});

t.test("checked at bind unless the operator is known to be unscoped; reaches() adds agents", async (t) => {
  const world: World = { scope: { wendy: "role=web" }, reachable: new Set(["wendy:n1"]) };
  const { live, conn, settle, asked } = setup(world);
  const unscoped = conn();
  live.bind(wendy(""), unscoped.conn, ["n9"]);
  await settle();
  t.same(asked, [], "an unscoped operator's binding is not checked at bind");

  // Retagged between the ticket and the attach: the binding is checked at once.
  const ticketOnly = conn();
  live.bind(wendy(undefined), ticketOnly.conn, ["n2"]);
  await settle();
  t.same(ticketOnly.ended, ["agent_out_of_scope"], "a ticket-only attach (scope not known) is checked");

  const stream = conn();
  const bound = live.bind(wendy(), stream.conn);
  await settle();
  t.same(asked, ["wendy:n2"], "no agents yet, nothing asked");
  bound.reaches(["n1"]);
  await settle();
  t.same(stream.ended, [], "its agent is in scope");
  bound.reaches(["n1", "n3"]);
  await settle();
  t.same(asked.at(-1), "wendy:n1,n3", "the whole set is asked about");
  t.same(stream.ended, ["agent_out_of_scope"]);
});

t.test("a released connection is never ended by a late answer", async (t) => {
  const world: World = { scope: { wendy: "role=web" }, reachable: new Set() };
  const { live, conn, settle, holdAnswers } = setup(world);
  const a = conn();
  const release = holdAnswers();
  const bound = live.bind(wendy(), a.conn, ["n1"]);
  bound();
  release();
  await settle();
  t.same(a.ended, []);
  t.equal(live.count(), 0);
  t.notOk(live.watchesAgents());
});
