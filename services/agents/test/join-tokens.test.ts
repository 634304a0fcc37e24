import { hostname } from "node:os";
import t, { type Test } from "tap";
import { JOIN_TOKEN_RE, joinedAgentName } from "@orch/contracts";
import { OrchError, type Actor } from "@orch/kit";
import { createTestDatabase, eventually, memoryLogger, startNats } from "@orch/kit/testing";
import { type AgentProcess, agentPool, agentsClient, collectEvents, startAgentsService } from "./harness.js";

// Join tokens end to end: the admin RPCs (create/list/revoke and the 400s that change nothing),
// then real orch-agent processes presenting tokens over the TLS link: approved with the token's
// tags and a generated unique name, or left pending with the reason. The token never shows up in
// a log line (service or agent) or an audit event.
const nats = await startNats();
const db = await createTestDatabase();
const svcLog = memoryLogger("agents", "debug");
const started = await startAgentsService(nats, db, {}, { log: svcLog.log });
const { deps, server } = started;
const nc = await nats.connect("caller");
const ev = collectEvents(nc);
const { c, as } = agentsClient(nc);
const agents = agentPool();
const tokens: string[] = [];
const spawned: AgentProcess[] = [];
const pool = {
  spawn(args: string[], opts: { dataDir?: string } = {}) {
    const a = agents.spawn(args, opts);
    spawned.push(a);
    return a;
  },
  stop: () => agents.stop(),
};
t.teardown(async () => {
  await pool.stop();
  await started.stop();
  await db.drop();
  await nats.stop();
});

const OPERATOR: Actor = { id: "01OPERATOR", name: "bob", type: "operator", role: "operator" };
const HOST = hostname();

async function refused(t: Test, p: Promise<unknown>, code: string, reason: string) {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof OrchError, `refused (${reason})`);
  t.equal((err as OrchError).code, code, `code ${code}`);
  t.equal((err as OrchError).reason, reason, `reason ${reason}`);
}

async function create(req: { ttlS?: number; maxUses?: number; tags?: Record<string, string>; namePrefix?: string }) {
  const r = await c.createJoinToken(
    {
      ttlS: req.ttlS ?? 3600,
      maxUses: req.maxUses ?? 0,
      tags: req.tags ?? {},
      namePrefix: req.namePrefix ?? "",
      description: "",
    },
    as,
  );
  tokens.push(r.token);
  return r;
}

const agentRow = async (nodeId: string) =>
  (
    await deps.pool.query("SELECT name, status, tags, pending_reason, join_token_id FROM agents WHERE node_id = $1", [
      nodeId,
    ])
  ).rows[0];

/** A real orch-agent with `--join-token`, once the registry holds it with `status`. */
async function join(token: string, status: "approved" | "pending") {
  const a = pool.spawn(["--server", server, "--join-token", token]);
  const nodeId = await a.nodeId();
  const up = await a.waitFor((r) => r.msg === "link up");
  t.equal(up.status, status, `the Welcome says ${status}`);
  return { a, nodeId, up, row: await eventually(() => agentRow(nodeId)) };
}

t.test("create, list and revoke; the token is shown once and stored hashed", async (t) => {
  const r = await create({ ttlS: 600, maxUses: 3, tags: { env: "test" }, namePrefix: "web" });
  t.match(r.token, JOIN_TOKEN_RE, "ojt_<id>.<secret>");
  const jt = r.joinToken!;
  t.equal(r.token.slice(4, 30), jt.id, "the id is the token's first part");
  t.match(jt, { state: "active", uses: 0, maxUses: 3, namePrefix: "web", tags: { env: "test" }, createdBy: "01ADMIN" });
  t.equal(jt.expiresAt - jt.createdAt, 600_000, "expires after ttl_s");

  const stored = (await deps.pool.query("SELECT secret_hash FROM join_tokens WHERE id = $1", [jt.id])).rows[0];
  t.equal(stored.secret_hash.length, 32, "a SHA-256 is stored");
  t.notOk(stored.secret_hash.toString("latin1").includes(r.token.split(".")[1]), "not the secret");

  const second = await create({});
  const list = await c.listJoinTokens({ limit: 0, cursor: "" }, as);
  t.same(
    list.joinTokens.slice(0, 2).map((x) => x.id),
    [second.joinToken!.id, jt.id],
    "newest first",
  );
  const page1 = await c.listJoinTokens({ limit: 1, cursor: "" }, as);
  t.equal(page1.joinTokens.length, 1);
  const page2 = await c.listJoinTokens({ limit: 1, cursor: page1.nextCursor }, as);
  t.equal(page2.joinTokens[0]!.id, jt.id, "keyset paging");

  const revoked = await c.revokeJoinToken({ id: jt.id }, as);
  t.equal(revoked.state, "revoked");
  t.ok(revoked.revokedAt > 0);
  const again = await c.revokeJoinToken({ id: jt.id }, as);
  t.equal(again.revokedAt, revoked.revokedAt, "revoking again changes nothing");
  await ev.wait("join_token.revoked", jt.id);
  await ev.wait("join_token.created", jt.id);
  await new Promise((r) => setTimeout(r, 300));
  t.equal(ev.of("join_token.revoked", jt.id).length, 1, "one revoked event");
  const created = ev.of("join_token.created", jt.id)[0]!;
  t.match(created.actor, { id: "01ADMIN", type: "operator" });
  t.same(created.metadata, { ttl_s: 600, max_uses: 3, tags: { env: "test" }, name_prefix: "web" });
  await refused(t, c.revokeJoinToken({ id: "01aaaaaaaaaaaaaaaaaaaaaaaa" }, as), "NOT_FOUND", "join_token_not_found");
  await refused(t, c.revokeJoinToken({ id: "nope" }, as), "NOT_FOUND", "join_token_not_found");
});

t.test("bad input and non-admins change nothing", async (t) => {
  const count = async () => Number((await deps.pool.query("SELECT count(*) FROM join_tokens")).rows[0].count);
  const before = await count();
  const base = { ttlS: 3600, maxUses: 0, tags: {}, namePrefix: "", description: "" };
  await refused(t, c.createJoinToken({ ...base, ttlS: 0 }, as), "INVALID_ARGUMENT", "invalid_ttl");
  await refused(t, c.createJoinToken({ ...base, ttlS: 59 }, as), "INVALID_ARGUMENT", "invalid_ttl");
  await refused(t, c.createJoinToken({ ...base, maxUses: -1 }, as), "INVALID_ARGUMENT", "invalid_max_uses");
  await refused(t, c.createJoinToken({ ...base, namePrefix: "Web_1" }, as), "INVALID_ARGUMENT", "invalid_name_prefix");
  await refused(t, c.createJoinToken({ ...base, tags: { "bad key": "x" } }, as), "INVALID_ARGUMENT", "invalid_tag_key");
  await refused(
    t,
    c.createJoinToken({ ...base, description: "x".repeat(201) }, as),
    "INVALID_ARGUMENT",
    "invalid_description",
  );
  await refused(t, c.createJoinToken(base, { actor: OPERATOR }), "PERMISSION_DENIED", "admin_required");
  await refused(
    t,
    c.listJoinTokens({ limit: 0, cursor: "" }, { actor: OPERATOR }),
    "PERMISSION_DENIED",
    "admin_required",
  );
  await refused(t, c.listJoinTokens({ limit: 0, cursor: "zzz" }, as), "INVALID_ARGUMENT", "invalid_cursor");
  t.equal(await count(), before, "no token was created");
});

t.test("a valid token approves at once with its tags and a unique name; max_uses holds", async (t) => {
  const r = await create({ maxUses: 2, tags: { env: "test", role: "web" }, namePrefix: "web" });
  const id = r.joinToken!.id;
  const first = await join(r.token, "approved");
  const name = joinedAgentName("web", HOST);
  t.equal(first.up.name, name, "the Welcome carries <prefix>-<hostname>");
  t.match(first.row, {
    name,
    status: "approved",
    tags: { env: "test", role: "web" },
    pending_reason: "",
    join_token_id: id,
  });
  const approved = await ev.wait("agent.approved", first.nodeId);
  t.match(approved.actor, { id, name: `join_token:${id}`, type: "join_token" }, "approved by the token");
  t.match(approved.metadata, { name, join_token_id: id, tags: { env: "test", role: "web" } });

  const second = await join(r.token, "approved");
  t.equal(second.row.name, joinedAgentName("web", HOST, 2), "the same hostname gets -2");

  const third = await join(r.token, "pending");
  t.match(third.row, { status: "pending", name: null, pending_reason: "join_token_exhausted", join_token_id: null });
  const reg = await ev.wait("agent.registered", third.nodeId);
  t.equal(reg.metadata?.pending_reason, "join_token_exhausted", "recorded on first contact");
  const tok = (await c.listJoinTokens({ limit: 0, cursor: "" }, as)).joinTokens.find((x) => x.id === id)!;
  t.match(tok, { uses: 2, state: "exhausted" });

  // Restarting an approved agent with the used-up token changes nothing.
  await first.a.signal("SIGKILL");
  const back = pool.spawn(["--server", server, "--join-token", r.token], { dataDir: first.a.dataDir });
  const up = await back.waitFor((x) => x.msg === "link up");
  t.match(up, { status: "approved", name });
});

t.test("expired, revoked and garbage tokens leave the agent pending with the reason", async (t) => {
  const expired = await create({ ttlS: 60 });
  await deps.pool.query("UPDATE join_tokens SET expires_at = $2 WHERE id = $1", [
    expired.joinToken!.id,
    Date.now() - 1,
  ]);
  t.match((await join(expired.token, "pending")).row, { status: "pending", pending_reason: "join_token_expired" });

  const revoked = await create({});
  await c.revokeJoinToken({ id: revoked.joinToken!.id }, as);
  t.match((await join(revoked.token, "pending")).row, { status: "pending", pending_reason: "join_token_revoked" });

  // Well-formed but not ours: a made-up id, and a real id with the wrong secret.
  const garbage = `ojt_${"0".repeat(26)}.${"A".repeat(43)}`;
  t.match((await join(garbage, "pending")).row, { pending_reason: "join_token_invalid" });
  const real = await create({});
  const forged = `${real.token.split(".")[0]}.${"B".repeat(43)}`;
  tokens.push(forged);
  const f = await join(forged, "pending");
  t.match(f.row, { pending_reason: "join_token_invalid" });
  t.equal(
    (await c.listJoinTokens({ limit: 0, cursor: "" }, as)).joinTokens.find((x) => x.id === real.joinToken!.id)!.uses,
    0,
  );

  // An operator can still approve a pending agent by hand; the reason goes away.
  await c.setApproval({ nodeId: f.nodeId, status: "approved", name: "by-hand" }, as);
  t.match(await agentRow(f.nodeId), { status: "approved", pending_reason: "" });
});

t.test("the agent refuses a malformed token without echoing it", async (t) => {
  const a = pool.spawn(["--server", server, "--join-token", "ojt_not-a-token-SECRETVALUE"]);
  t.not(await a.exited, 0, "exits with a usage error");
  const out = a.lines.join("\n");
  t.match(out, /--join-token must be a join token/);
  t.notMatch(out, /SECRETVALUE/, "the value is not repeated");
});

t.test("no token appears in any log line or audit event", async (t) => {
  await eventually(async () => Number((await deps.pool.query("SELECT count(*) FROM outbox")).rows[0].count) === 0);
  await nc.flush();
  const secrets = tokens.map((x) => x.split(".")[1]!);
  const events = JSON.stringify(ev.events.map((e) => ({ ...e, metadata: e.metadata })));
  const stored = JSON.stringify((await deps.pool.query("SELECT * FROM agents")).rows);
  const texts = {
    "service log": svcLog.lines.join("\n"),
    "agents' output": spawned.flatMap((a) => a.lines).join("\n"),
    events,
    "agents table": stored,
  };
  t.ok(svcLog.lines.length > 0 && ev.events.length > 0, "there was output to search");
  for (const [where, text] of Object.entries(texts))
    t.notOk(
      secrets.some((s) => text.includes(s)),
      `no secret in the ${where}`,
    );
});
