import t, { type Test } from "tap";
import { createHash } from "node:crypto";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { fromBinary } from "@bufbuild/protobuf";
import { AckPolicy, DeliverPolicy, jetstream, jetstreamManager } from "@nats-io/jetstream";
import { AuditEventSchema, AuthService, TerminalService } from "@orch/contracts";
import { rpcClient, ulidGenerator } from "@orch/kit";
import { createTestDatabase, ed25519, eventually, memoryLogger, startNats } from "@orch/kit/testing";
import { createTerminalFeature } from "../../../agent/src/terminal/feature.js";
import { buildGateway } from "../../gateway/src/app.js";
import { gatewayConfigSchema } from "../../gateway/src/config.js";
import { call, login, manualClock, startAuth } from "../../gateway/test/harness.js";
import { startBridgedAgent } from "./agent-bridge.js";
import { asciinemaCat, attach, startAgentsRegistry, startTerminal, type Attached } from "./harness.js";

// POST /terminal → ws_url → WebSocket ↔ NATS ↔ a real PTY, in one process: gateway, auth and
// terminal service as in production, the agent's real terminal feature on a bus bridge.
const WEB = "a1".repeat(16);
const OFF = "b2".repeat(16);
const PENDING = "c3".repeat(16);
const GONE = "d4".repeat(16);
const SLOW = "e5".repeat(16);
const CONSOLE = "https://console.example.com";

const nats = await startNats();
const db = await createTestDatabase();
const clock = manualClock();
const admin = ed25519();
const auth = await startAuth(nats, db, admin, clock);
const termLog = memoryLogger("terminal");
const terminal = await startTerminal(nats, db, {
  clock,
  log: termLog.log,
  terminal: {
    open_timeout_seconds: 1,
    agent_silence_seconds: 3600,
    idle_timeout_seconds: 3600,
    detach_grace_seconds: 0,
  },
});
const registry = await startAgentsRegistry(nats, {
  [WEB]: { status: "approved", name: "web-1" },
  [OFF]: { status: "approved", name: "off-1" },
  [PENDING]: { status: "pending", name: "" },
  [GONE]: { status: "approved", name: "gone-1" },
  [SLOW]: { status: "approved", name: "slow-1" },
});
const feature = createTerminalFeature();
const web = await startBridgedAgent(nats, {
  nodeId: WEB,
  features: [feature],
  options: { shells: ["/bin/bash", "/bin/sh"] },
});
const off = await startBridgedAgent(nats, { nodeId: OFF, features: [feature], options: { terminalEnabled: false } });
const slowNc = await nats.connect("slow-agent");
slowNc.subscribe(`orch.agent.${SLOW}.>`, { callback: () => {} }); // takes requests, never answers
const gwLog = memoryLogger("gateway");
const gwNc = await nats.connect("gateway");
const gw = await buildGateway({
  config: gatewayConfigSchema.parse({
    http: { port: 0, host: "127.0.0.1", allowed_origins: [CONSOLE] },
    gateway: { services: ["auth", "terminal"] },
  }),
  log: gwLog.log,
  nc: gwNc,
  clock,
  ids: ulidGenerator(clock),
});
await gw.app.listen({ port: 0, host: "127.0.0.1" });
const port = (gw.app.server.address() as { port: number }).port;
const url = `http://127.0.0.1:${port}`;
t.teardown(async () => {
  await gw.app.close();
  gw.tokens.stop();
  await web.stop();
  await off.stop();
  await registry.stop();
  await terminal.stop();
  await auth.stop();
  await db.drop();
  await nats.stop();
});

const adminToken = await login(url, admin);
async function operator(name: string) {
  const key = ed25519();
  const r = await call(url, "POST", "/api/v1/operators", {
    token: adminToken,
    body: { name, public_key: key.publicKeyHex, role: "operator" },
  });
  if (r.status !== 201) throw new Error(`create ${name}: ${r.status} ${r.text}`);
  return key;
}
const bobKey = await operator("bob");
const carolKey = await operator("carol");
const bob = await login(url, bobKey);
const carol = await login(url, carolKey);

const problem = (t: Test, r: { status: number; body: any; type?: string }, status: number, code: string, what = "") => {
  t.equal(r.status, status, `${what} status ${status}`);
  t.equal(r.body?.code, code, `${what} code ${code}`);
  if (r.type !== undefined) t.match(r.type, /problem\+json/);
};

async function open(token: string, node = WEB, query = "") {
  const r = await call(url, "POST", `/api/v1/terminal/${node}${query}`, { token });
  if (r.status !== 201) throw new Error(`open: ${r.status} ${r.text}`);
  return r.body as { session_id: string; ws_url: string };
}

async function attached(wsUrl: string, o: { origin?: string; token?: string } = {}): Promise<Attached> {
  const r = await attach(wsUrl, o);
  if (!r.ok) throw new Error(`attach refused: ${r.status} ${JSON.stringify(r.body)}`);
  return r.a;
}

const session = async (id: string, token = adminToken) =>
  (await call(url, "GET", `/api/v1/terminal/session/${id}`, { token })).body;

t.test("open, type, see the output, exit: closed with closed_at, transcript plays in asciinema", async (t) => {
  const o = await open(bob, "web-1", "?cols=100&rows=30&shell=/bin/bash");
  t.match(o.session_id, /^[0-9A-HJKMNP-TV-Z]{26}$/);
  t.match(
    o.ws_url,
    new RegExp(
      `^ws://127\\.0\\.0\\.1:${port}/api/v1/terminal/session/${o.session_id}/attach\\?ticket=[A-Za-z0-9_-]{43}$`,
    ),
  );
  const live = await session(o.session_id, bob);
  t.equal(live.status, "open");
  t.equal(live.node_id, WEB);
  t.equal(live.closed_at, null);
  t.type(live.opened_at, "number");
  t.ok(live.opened_at < 1e11, "opened_at is Unix seconds");

  const a = await attached(o.ws_url);
  const n = Math.floor(Math.random() * 1e9);
  const tag = `hello-${n + 1}`;
  a.send(`echo hello-$((${n}+1)); exit\r`);
  const end = await a.closed;
  t.equal(end.code, 1000);
  t.equal(end.reason, "exit:0", "the close reason carries the exit code");
  t.match(a.text(), new RegExp(tag), "the command's output came back over the socket");

  const closed = await eventually(async () => {
    const s = await session(o.session_id, bob);
    return s.status === "closed" ? s : undefined;
  });
  t.type(closed.closed_at, "number");
  t.ok(closed.closed_at >= closed.opened_at);
  t.equal(closed.exit_code, 0);
  t.equal(closed.close_reason, "exit");
  t.match(closed.sha256, /^[0-9a-f]{64}$/);
  t.equal(closed.transcript_path, join(terminal.dir, `${o.session_id}.cast`));

  const dl = await fetch(`${url}/api/v1/terminal/session/${o.session_id}/transcript`, {
    headers: { authorization: `Bearer ${bob}` },
  });
  t.equal(dl.status, 200);
  t.equal(dl.headers.get("content-type"), "application/x-asciicast");
  const body = Buffer.from(await dl.arrayBuffer());
  t.equal(dl.headers.get("x-transcript-sha256"), closed.sha256);
  t.equal(createHash("sha256").update(body).digest("hex"), closed.sha256, "the stored SHA-256 matches the file");
  const lines = body
    .toString()
    .trimEnd()
    .split("\n")
    .map((l) => JSON.parse(l));
  t.match(lines[0], { version: 2, width: 100, height: 30 });
  t.ok(
    lines
      .slice(1)
      .every((e: unknown[]) => Array.isArray(e) && typeof e[0] === "number" && (e[1] === "o" || e[1] === "r")),
    "asciicast v2 events",
  );
  const file = join(terminal.dir, "dl.cast");
  writeFileSync(file, body);
  const played = await asciinemaCat(file);
  t.equal(played.code, 0);
  t.match(played.output, new RegExp(tag), "asciinema cat prints the session");
});

t.test("resize frames reach the PTY", async (t) => {
  const o = await open(bob, WEB, "?shell=/bin/sh");
  const a = await attached(o.ws_url);
  a.control({ type: "resize", cols: 123, rows: 45 });
  a.control({ type: "resize", cols: 0, rows: 45 }); // refused by the gateway with an error frame
  a.send("sleep 0.2; stty size; exit 3\n");
  const end = await a.closed;
  t.equal(end.reason, "exit:3");
  t.match(a.text(), /45 123/);
  const s = await eventually(async () =>
    (await session(o.session_id)).status === "closed" ? session(o.session_id) : undefined,
  );
  t.equal(s.exit_code, 3);
  const cast = (await call(url, "GET", `/api/v1/terminal/session/${o.session_id}/transcript`, { token: adminToken }))
    .text;
  t.match(cast, /"r","123x45"/, "the resize is in the transcript");
});

t.test("tickets: single use, expiring, bound to operator and session; Origin checked", async (t) => {
  const o = await open(bob);
  const refusal = async (
    u: string,
    opts: { origin?: string; token?: string },
    status: number,
    code: string,
    what: string,
  ) => {
    const r = await attach(u, opts);
    t.notOk(r.ok, `${what} refused`);
    if (!r.ok) problem(t, r, status, code, what);
  };
  await refusal(o.ws_url, { origin: "https://evil.example" }, 403, "origin_not_allowed", "foreign Origin");
  await refusal(o.ws_url, { origin: "null" }, 403, "origin_not_allowed", "opaque Origin");
  await refusal(o.ws_url.replace(/\?ticket=.*/, ""), {}, 401, "ticket_required", "no ticket");
  await refusal(
    o.ws_url,
    { token: carol },
    403,
    "ticket_operator_mismatch",
    "another operator presenting bob's ticket",
  );
  await refusal(o.ws_url, { token: bob }, 401, "invalid_ticket", "the spent ticket, even for its owner");

  const t2 = (await call(url, "POST", `/api/v1/terminal/session/${o.session_id}/ticket`, { token: bob })).body;
  const other = await open(bob);
  await refusal(
    t2.ws_url.replace(o.session_id, other.session_id),
    {},
    401,
    "invalid_ticket",
    "a ticket on another session's URL",
  );

  const t3 = (await call(url, "POST", `/api/v1/terminal/session/${o.session_id}/ticket`, { token: bob })).body;
  const a = await attached(t3.ws_url, { origin: CONSOLE, token: bob });
  await refusal(t3.ws_url, {}, 401, "invalid_ticket", "reuse");

  const t4 = (await call(url, "POST", `/api/v1/terminal/session/${o.session_id}/ticket`, { token: bob })).body;
  clock.advance(31_000);
  await refusal(t4.ws_url, {}, 401, "ticket_expired", "expired");

  const t5 = (await call(url, "POST", `/api/v1/terminal/session/${o.session_id}/ticket`, { token: bob })).body;
  const same = await attached(t5.ws_url, { origin: url });
  t.pass("same-host Origin admitted");
  a.send("exit\r");
  t.match((await a.closed).reason, /^exit:/);
  await same.closed;
  const rest = await attach(other.ws_url);
  if (rest.ok) {
    rest.a.send("exit\r");
    await rest.a.closed;
  }
  const secrets = [o.ws_url, t2.ws_url, t3.ws_url, t4.ws_url, t5.ws_url].map(
    (u) => new URL(u).searchParams.get("ticket")!,
  );
  const logs = termLog.lines.join("") + gwLog.lines.join("");
  t.notOk(
    secrets.some((s) => logs.includes(s)),
    "no ticket in any log line",
  );
});

t.test("only the opener or an admin sees, attaches, closes and downloads", async (t) => {
  const o = await open(bob, WEB, "?shell=/bin/sh");
  for (const [m, p] of [
    ["GET", ""],
    ["GET", "/transcript"],
    ["POST", "/ticket"],
    ["DELETE", ""],
  ] as const) {
    const r = await call(url, m, `/api/v1/terminal/session/${o.session_id}${p}`, { token: carol });
    problem(t, r, 404, "session_not_found", `carol ${m} ${p || "session"}`);
  }
  const carolList = (await call(url, "GET", "/api/v1/terminal", { token: carol })).body;
  t.notOk(
    carolList.some((s: { session_id: string }) => s.session_id === o.session_id),
    "carol's list leaves bob's session out",
  );
  const adminList = (await call(url, "GET", "/api/v1/terminal", { token: adminToken })).body;
  t.ok(
    adminList.some((s: { session_id: string }) => s.session_id === o.session_id),
    "the admin sees it",
  );
  t.notOk("transcript_path" in adminList[0], "the list has no transcript_path");
  const adminTicket = await call(url, "POST", `/api/v1/terminal/session/${o.session_id}/ticket`, { token: adminToken });
  t.equal(adminTicket.status, 201, "an admin may attach");
  const a = await attached(adminTicket.body.ws_url);

  const del = await call(url, "DELETE", `/api/v1/terminal/session/${o.session_id}`, { token: bob });
  t.equal(del.status, 204);
  const end = await a.closed;
  t.match(end.reason, /^(exit:\d+|ended:closed:closed_by_operator)$/, "the socket closes when the session is closed");
  const s = await session(o.session_id, bob);
  t.equal(s.status, "closed");
  t.type(s.closed_at, "number");
  t.equal(s.close_reason, "closed_by_operator");
  t.equal(
    (await call(url, "DELETE", `/api/v1/terminal/session/${o.session_id}`, { token: bob })).status,
    204,
    "closing a closed session is a no-op",
  );
  problem(
    t,
    await call(url, "POST", `/api/v1/terminal/session/${o.session_id}/ticket`, { token: bob }),
    409,
    "session_not_open",
  );
});

t.test("documented error conditions answer with their status and code, and change nothing", async (t) => {
  const before = (await call(url, "GET", "/api/v1/terminal", { token: adminToken })).body.length;
  problem(
    t,
    await call(url, "POST", `/api/v1/terminal/${"f6".repeat(16)}`, { token: bob }),
    404,
    "agent_not_found",
    "unknown agent",
  );
  problem(
    t,
    await call(url, "POST", "/api/v1/terminal/no-such-name", { token: bob }),
    404,
    "agent_not_found",
    "unknown name",
  );
  problem(
    t,
    await call(url, "POST", `/api/v1/terminal/${PENDING}`, { token: bob }),
    409,
    "agent_not_approved",
    "pending agent",
  );
  problem(
    t,
    await call(url, "POST", `/api/v1/terminal/${GONE}`, { token: bob }),
    409,
    "agent_not_connected",
    "agent not connected",
  );
  problem(
    t,
    await call(url, "POST", `/api/v1/terminal/off-1`, { token: bob }),
    409,
    "terminal_disabled",
    "terminal disabled",
  );
  problem(
    t,
    await call(url, "POST", `/api/v1/terminal/${SLOW}`, { token: bob }),
    504,
    "agent_timeout",
    "agent does not answer",
  );
  problem(
    t,
    await call(url, "POST", `/api/v1/terminal/${WEB}?shell=/usr/bin/python3`, { token: bob }),
    400,
    "shell_not_allowed",
    "shell outside the allow-list",
  );
  for (const q of [
    "cols=0",
    "cols=abc",
    "rows=1.5",
    "cols=2147483648",
    "rows=-1",
    "shell=bin/sh",
    "shell=%2Fbin%2Fsh%0A",
  ]) {
    const r = await call(url, "POST", `/api/v1/terminal/${WEB}?${q}`, { token: bob });
    problem(t, r, 400, "invalid_request", q);
    t.match(JSON.stringify(r.body.errors), new RegExp(q.split("=")[0]!), `${q}: names the field`);
  }
  problem(t, await call(url, "POST", `/api/v1/terminal/${WEB}`), 401, "unauthenticated", "no token");
  problem(
    t,
    await call(url, "GET", "/api/v1/terminal/session/01ARZ3NDEKTSV4RRFFQ69G5FAV", { token: bob }),
    404,
    "session_not_found",
    "unknown session",
  );
  problem(
    t,
    await call(url, "GET", "/api/v1/terminal/session/not-a-ulid", { token: bob }),
    400,
    "invalid_request",
    "malformed session id",
  );
  problem(
    t,
    await call(url, "GET", "/api/v1/terminal?status=running", { token: bob }),
    400,
    "invalid_request",
    "unknown status filter",
  );
  t.equal(
    (await call(url, "GET", "/api/v1/terminal", { token: adminToken })).body.length,
    before,
    "no session was created by a refused open",
  );
  const plain = await call(url, "GET", `/api/v1/terminal/session/01ARZ3NDEKTSV4RRFFQ69G5FAV/attach?ticket=x`);
  problem(t, plain, 426, "upgrade_required", "attach without an upgrade");
});

t.test("list: status filter and limit/cursor paging, newest first", async (t) => {
  const list = async (q: string) => call(url, "GET", `/api/v1/terminal${q}`, { token: adminToken });
  const closed = (await list("?status=closed")).body;
  t.ok(closed.length >= 3);
  t.ok(closed.every((s: { status: string }) => s.status === "closed"));
  const ids: string[] = [];
  let cursor = "";
  for (let i = 0; i < 50; i++) {
    const page = await fetch(`${url}/api/v1/terminal?status=closed&limit=1${cursor ? `&cursor=${cursor}` : ""}`, {
      headers: { authorization: `Bearer ${adminToken}` },
    });
    const body = (await page.json()) as Array<{ session_id: string }>;
    ids.push(...body.map((s) => s.session_id));
    cursor = page.headers.get("x-next-cursor") ?? "";
    if (!cursor) break;
  }
  t.same(
    ids,
    closed.map((s: { session_id: string }) => s.session_id),
    "paging with limit=1 yields the same sessions",
  );
  t.same([...ids].sort().reverse(), ids, "newest first");
});

t.test("audit events: opened and closed, with who, node and duration", async (t) => {
  await terminal.deps.relay?.flush();
  const obs = await nats.connect("audit-observer");
  const jsm = await jetstreamManager(obs);
  await jsm.consumers.add("AUDIT", {
    durable_name: "term",
    ack_policy: AckPolicy.None,
    deliver_policy: DeliverPolicy.All,
    filter_subject: "audit.terminal.>",
  });
  const consumer = await jetstream(obs).consumers.get("AUDIT", "term");
  const events = [];
  for await (const m of await consumer.fetch({ max_messages: 200, expires: 2000 }))
    events.push(fromBinary(AuditEventSchema, m.data));
  const opened = events.filter((e) => e.eventType === "terminal.session.opened");
  const closed = events.filter((e) => e.eventType === "terminal.session.closed");
  t.ok(opened.length >= 4);
  t.ok(closed.length >= 3);
  const o = opened[0]!;
  t.equal(o.actor?.name, "bob");
  t.equal(o.target?.type, "terminal_session");
  t.match(o.metadata, { node_id: WEB, node_name: "web-1" });
  const byOperator = closed.find((e) => e.metadata?.reason === "closed_by_operator");
  t.equal(byOperator?.actor?.name, "bob", "a DELETE names who closed it");
  t.type(byOperator?.metadata?.duration_seconds, "number");
  t.match(byOperator?.metadata, { node_id: WEB, operator_name: "bob", status: "closed" });
  const attached = events.filter((e) => e.eventType === "terminal.session.attached");
  t.ok(
    attached.some((e) => e.actor?.name === "bob" && e.metadata?.joining === false),
    "the opener's attach is recorded",
  );
  t.ok(
    attached.some((e) => e.actor?.name === "admin" && e.metadata?.joining === true),
    "an admin joining bob's session is recorded as such",
  );
});

t.test("a ticket carries the token it was obtained with, for an attach made with the ticket alone", async (t) => {
  const nc = await nats.connect("ticket-credential");
  t.teardown(() => nc.close());
  const terminalApi = rpcClient(nc, "terminal", TerminalService, { timeoutMs: 10_000 });
  const authApi = rpcClient(nc, "auth", AuthService, { timeoutMs: 10_000 });
  const bobs = await authApi.authenticate({ token: bob });
  const actor = { id: bobs.operator!.id, name: "bob", type: "operator" as const, role: "operator" };
  const issuer = { tokenHash: createHash("sha256").update(bob).digest("hex"), tokenExpiresAt: bobs.expiresAt };
  const tickets = async () =>
    (await terminal.deps.pool.query<{ n: number }>("SELECT count(*)::int AS n FROM tickets")).rows[0]!.n;
  const redeem = (wsUrl: string, sessionId: string) =>
    terminalApi.redeemTicket({ sessionId, ticket: new URL(wsUrl).searchParams.get("ticket")!, operatorId: "" });

  const o = await open(bob);
  const first = await redeem(o.ws_url, o.session_id);
  t.match(first.credential, issuer, "open: the caller's token hash and expiry");
  t.ok(first.credential!.tokenExpiresAt > Date.now(), "a real expiry");
  const again = (await call(url, "POST", `/api/v1/terminal/session/${o.session_id}/ticket`, { token: bob })).body;
  t.match((await redeem(again.ws_url, o.session_id)).credential, issuer, "re-attach ticket: the same");

  // A caller on the bus without a bearer token: the ticket is bound to the operator only.
  const bare = await terminalApi.issueTicket({ sessionId: o.session_id }, { actor });
  const redeemed = await terminalApi.redeemTicket({ sessionId: o.session_id, ticket: bare.ticket, operatorId: "" });
  t.match(redeemed.credential ?? {}, { tokenHash: "", tokenExpiresAt: 0 });

  // A malformed credential would bind the attach to nothing: refused, and no ticket issued.
  const bad = async (credential: { tokenHash: string; tokenExpiresAt: number }, field: string) => {
    const err = await terminalApi.issueTicket({ sessionId: o.session_id, credential }, { actor }).then(
      () => undefined,
      (e) => e,
    );
    t.match(err, { code: "INVALID_ARGUMENT", reason: "invalid_request" }, `${field} refused`);
    t.match(err?.details, { field: `credential.${field}` });
  };
  const before = await tickets();
  await bad({ tokenHash: "not-a-hash", tokenExpiresAt: issuer.tokenExpiresAt }, "token_hash");
  await bad({ tokenHash: issuer.tokenHash.toUpperCase(), tokenExpiresAt: issuer.tokenExpiresAt }, "token_hash");
  await bad({ tokenHash: issuer.tokenHash, tokenExpiresAt: 0 }, "token_expires_at");
  await bad({ tokenHash: issuer.tokenHash, tokenExpiresAt: Number.POSITIVE_INFINITY }, "token_expires_at");
  t.equal(await tickets(), before, "no ticket stored for a refused request");
  const credential = { tokenHash: "x", tokenExpiresAt: 1 };
  const sessions = async () => (await terminal.deps.pool.query("SELECT id FROM sessions")).rowCount;
  const sessionsBefore = await sessions();
  const err = await terminalApi
    .openSession({ nodeId: WEB, nodeName: "", cols: 0, rows: 0, shell: "", credential }, { actor })
    .then(
      () => undefined,
      (e) => e,
    );
  const refused = { code: "INVALID_ARGUMENT", details: { field: "credential.token_hash" } };
  t.match(err, refused, "open refuses it too, before any PTY");
  t.equal(await sessions(), sessionsBefore, "no session created");
  t.equal((await call(url, "DELETE", `/api/v1/terminal/session/${o.session_id}`, { token: bob })).status, 204);
});
