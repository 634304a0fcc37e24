import t from "tap";
import { silentLogger } from "@orch/kit/testing";
import { tokenHash } from "../src/auth-cache.js";
import { createLiveSessions, type Credential, type EndReason, type Verdict } from "../src/live-sessions.js";

// The registry's rules, with a manual clock and manual timers: which revocation ends which
// connection, expiry at expires_at, and re-validation after a gap in the broadcast.

function setup(verdicts: (cred: Credential) => Promise<Verdict> = async () => "valid") {
  let now = 1_000_000;
  const timers = new Map<number, { fn: () => void; at: number }>();
  let seq = 0;
  const asked: Credential[] = [];
  const live = createLiveSessions({
    clock: { now: () => now },
    log: silentLogger(),
    retryMs: 500,
    verify: (cred) => {
      asked.push(cred);
      return verdicts(cred);
    },
    timer: {
      set: (fn, ms) => {
        timers.set(++seq, { fn, at: now + ms });
        return seq;
      },
      clear: (h) => void timers.delete(h as number),
    },
  });
  const advance = (ms: number) => {
    now += ms;
    for (const [id, tm] of [...timers].sort((a, b) => a[1].at - b[1].at)) {
      if (tm.at > now || !timers.has(id)) continue;
      timers.delete(id);
      tm.fn();
    }
  };
  const conn = (kind = "test") => {
    const ended: EndReason[] = [];
    return { ended, conn: { kind, end: (r: EndReason) => ended.push(r) } };
  };
  return { live, advance, conn, asked, timers, now: () => now };
}

const alice = (token: string, expiresAt = Infinity): Credential => ({ operatorId: "alice", token, expiresAt });

t.test("a logout ends only the connections of that token", async (t) => {
  const { live, conn } = setup();
  const a = conn();
  const b = conn();
  const c = conn();
  live.bind(alice("tok-a"), a.conn);
  live.bind(alice("tok-b"), b.conn);
  live.bind({ operatorId: "bob", token: "tok-c", expiresAt: Infinity }, c.conn);
  live.revoke({ tokenHash: tokenHash("tok-a"), tokenOperatorId: "alice" });
  t.same(a.ended, ["logged_out"]);
  t.same(b.ended, [], "the operator's other token is untouched");
  t.same(c.ended, []);
  t.equal(live.count(), 2);
});

t.test("removing an operator ends every connection of it, ticket-only ones included", async (t) => {
  const { live, conn } = setup();
  const a = conn();
  const b = conn();
  const bob = conn();
  live.bind(alice("tok-a"), a.conn);
  live.bind(alice(""), b.conn);
  live.bind({ operatorId: "bob", token: "tok-c", expiresAt: Infinity }, bob.conn);
  live.revoke({ operatorId: "alice" });
  t.same(a.ended, ["operator_revoked"]);
  t.same(b.ended, ["operator_revoked"]);
  t.same(bob.ended, []);
});

t.test("a connection bound to no token ends on any logout of its operator", async (t) => {
  const { live, conn } = setup();
  const ticketOnly = conn();
  const bobs = conn();
  live.bind(alice(""), ticketOnly.conn);
  live.bind({ operatorId: "bob", token: "", expiresAt: Infinity }, bobs.conn);
  live.revoke({ tokenHash: tokenHash("some-other-token"), tokenOperatorId: "alice" });
  t.same(ticketOnly.ended, ["logged_out"]);
  t.same(bobs.ended, []);
  live.revoke({ tokenHash: tokenHash("x") });
  t.same(bobs.ended, [], "a logout naming no operator ends no ticket-only connection");
});

t.test("expiry: ended when expires_at is reached, not before; an expired credential ends at once", async (t) => {
  const { live, conn, advance, now } = setup();
  const a = conn();
  live.bind(alice("tok-a", now() + 10_000), a.conn);
  advance(9_999);
  t.same(a.ended, []);
  advance(1);
  t.same(a.ended, ["token_expired"]);
  t.equal(live.count(), 0);
  const late = conn();
  live.bind(alice("tok-b", now() - 1), late.conn);
  t.same(late.ended, ["token_expired"]);
});

t.test("an expiry beyond setTimeout's range is re-armed on the way", async (t) => {
  const { live, conn, advance, now } = setup();
  const a = conn();
  const days30 = 30 * 86_400_000;
  live.bind(alice("tok-a", now() + days30), a.conn);
  advance(2 ** 31 - 1);
  t.same(a.ended, [], "not ended at the first timer");
  advance(days30 - (2 ** 31 - 1));
  t.same(a.ended, ["token_expired"]);
});

t.test("released connections are forgotten: no end, no timers", async (t) => {
  const { live, conn, timers, now } = setup();
  const a = conn();
  const release = live.bind(alice("tok-a", now() + 5_000), a.conn);
  t.equal(timers.size, 1);
  release();
  t.equal(timers.size, 0);
  live.revoke({ operatorId: "alice" });
  t.same(a.ended, []);
  t.equal(live.count(), 0);
});

t.test("re-validation ends what no longer authenticates, asks once per token, retries on no answer", async (t) => {
  let authUp = false;
  const { live, conn, advance, asked } = setup(async (cred) => {
    if (!authUp) return "unknown";
    return cred.token === "tok-gone" ? "invalid" : "valid";
  });
  const good1 = conn();
  const good2 = conn();
  const gone = conn();
  live.bind(alice("tok-good"), good1.conn);
  live.bind(alice("tok-good"), good2.conn);
  live.bind(alice("tok-gone"), gone.conn);
  await live.revalidateAll();
  t.equal(asked.length, 2, "one question per distinct token");
  t.same(gone.ended, [], "an unreachable auth service ends nothing");
  t.equal(live.count("open"), 3);
  authUp = true;
  advance(500);
  await new Promise((r) => setImmediate(r));
  t.same(gone.ended, ["token_invalid"], "the retry found the revoked token");
  t.same(good1.ended, []);
  t.same(good2.ended, []);
  t.equal(live.count(), 2);
});

t.test("a revocation during a re-validation wins; the late verdict changes nothing", async (t) => {
  let answer!: (v: Verdict) => void;
  const { live, conn } = setup(() => new Promise<Verdict>((r) => (answer = r)));
  const a = conn();
  live.bind(alice("tok-a"), a.conn);
  const round = live.revalidateAll();
  t.equal(live.count("checking"), 1);
  live.revoke({ tokenHash: tokenHash("tok-a") });
  answer("invalid");
  await round;
  t.same(a.ended, ["logged_out"], "ended once, for the revocation");
});

t.test("a connection whose end() throws is still removed", async (t) => {
  const { live } = setup();
  live.bind(alice("tok-a"), {
    kind: "bad",
    end: () => {
      throw new Error("boom");
    },
  });
  live.revoke({ operatorId: "alice" });
  t.equal(live.count(), 0);
});

/** A terminal attached with its ticket alone: the token that obtained the ticket is known by hash only. */
const ticketOnly = (token: string, expiresAt = Infinity): Credential => ({
  operatorId: "alice",
  token: "",
  tokenHash: tokenHash(token),
  expiresAt,
});

t.test("ticket-only, bound to the issuing token's hash: only that token's logout ends it", async (t) => {
  const { live, conn } = setup();
  const a = conn();
  live.bind(ticketOnly("tok-a"), a.conn);
  live.revoke({ tokenHash: tokenHash("tok-b"), tokenOperatorId: "alice" });
  t.same(a.ended, [], "a logout of another token of the operator leaves it open");
  live.revoke({ tokenHash: tokenHash("tok-a"), tokenOperatorId: "alice" });
  t.same(a.ended, ["logged_out"]);
  const b = conn();
  live.bind(ticketOnly("tok-c"), b.conn);
  live.revoke({ operatorId: "alice" });
  t.same(b.ended, ["operator_revoked"], "the operator's removal still ends it");
});

t.test("ticket-only, bound to the issuing token's expiry: ended at expires_at", async (t) => {
  const { live, conn, advance, now } = setup();
  const a = conn();
  live.bind(ticketOnly("tok-a", now() + 5_000), a.conn);
  advance(4_999);
  t.same(a.ended, []);
  advance(1);
  t.same(a.ended, ["token_expired"]);
});

t.test("a token logged out before its ticket is redeemed: the attach ends as it is bound", async (t) => {
  const { live, conn, advance } = setup();
  live.revoke({ tokenHash: tokenHash("tok-a"), tokenOperatorId: "alice" });
  const late = conn();
  live.bind(ticketOnly("tok-a"), late.conn);
  t.same(late.ended, ["logged_out"]);
  t.equal(live.count(), 0);
  const other = conn();
  live.bind(ticketOnly("tok-b"), other.conn);
  t.same(other.ended, [], "another token is not affected");
  advance(10 * 60_000 + 1);
  const muchLater = conn();
  live.bind(ticketOnly("tok-a"), muchLater.conn);
  t.same(muchLater.ended, [], "forgotten after the memory window (tickets live far shorter)");
});

t.test("re-validation: a ticket-only binding shares the answer about its token with a bearer binding", async (t) => {
  const { live, conn, asked } = setup(async (cred) => (cred.token === "tok-gone" ? "invalid" : "valid"));
  const ticketFirst = conn();
  const bearer = conn();
  const alone = conn();
  // Bound before the bearer binding of the same token: the round still asks about the token first.
  live.bind(ticketOnly("tok-gone"), ticketFirst.conn);
  live.bind(alice("tok-gone"), bearer.conn);
  live.bind(ticketOnly("tok-other"), alone.conn);
  await live.revalidateAll();
  t.same(bearer.ended, ["token_invalid"]);
  t.same(ticketFirst.ended, ["token_invalid"], "shares the bearer binding's answer");
  t.same(alone.ended, [], "without a bearer binding of its token: checked through its operator");
  t.same(
    asked.map((c) => c.token),
    ["tok-gone", ""],
    "one question for the token, one for the operator",
  );
});
