import t, { type Test } from "tap";
import pg from "pg";
import type { z } from "zod";
import { AgentsService, AuditService, AuthService, NotifyService, SecretsService } from "@orch/contracts";
import { StateService, TerminalService } from "@orch/contracts";
import { OrchError, rpcClient, type Actor } from "@orch/kit";
import { memoryLogger } from "@orch/kit/testing";
import { call } from "./harness.js";
import { startStack } from "./stack.js";

// Input rules and cursors (docs/http-api.md) against every real service behind the real gateway: NUL and
// lone surrogates are 400 at the gateway and INVALID_ARGUMENT at each service; deep JSON is 400;
// a garbage cursor is 400 invalid_cursor on every list; an internal error is logged with its id.
const gwLog = memoryLogger("gateway", "info");
const stack = await startStack({ gatewayLog: gwLog.log });
t.teardown(() => stack.stop());
const { gw, token } = stack;
const ADMIN: Actor = { id: "admin", name: "admin", type: "operator", role: "admin" };
const as = { actor: ADMIN };

const bad = (t: Test, r: Awaited<ReturnType<typeof call>>, code: string, what: string) => {
  t.equal(r.status, 400, `${what}: 400 (got ${r.status} ${r.text.slice(0, 200)})`);
  t.match(r.type, /^application\/problem\+json/, `${what}: problem+json`);
  t.equal(r.body?.code, code, `${what}: code ${code}`);
};

/** What a refused call threw (undefined when it succeeded). */
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (err: unknown) => err as OrchError,
  );

async function clients(name: string) {
  const nc = await stack.nats.connect(name);
  const o = { timeoutMs: 5000 };
  return {
    nc,
    auth: rpcClient(nc, "auth", AuthService, o),
    agents: rpcClient(nc, "agents", AgentsService, o),
    audit: rpcClient(nc, "audit", AuditService, o),
    notify: rpcClient(nc, "notify", NotifyService, o),
    secrets: rpcClient(nc, "secrets", SecretsService, o),
    state: rpcClient(nc, "state", StateService, o),
    terminal: rpcClient(nc, "terminal", TerminalService, o),
  };
}

t.test("NUL or a lone surrogate anywhere in input is 400 invalid_characters naming where", async (t) => {
  const now = Math.floor(Date.now() / 1000);
  const window = (reason: string) => ({ starts_at: now, ends_at: now + 60, reason });
  const webhook = (config: unknown) => ({ name: "c1", channel_type: "webhook", config });
  const assignment = (selector: string) => ({ name: "a1", selector, modules: ["m1"] });
  const KEY = "ab".repeat(32);
  const YAML = "resources:\n  - id: a\u0000\n";
  // JSON text whose reason decodes to a string holding a lone high surrogate.
  const LONE = JSON.stringify(window("x")).replace('"x"', '"x\\ud800"');
  // [what, method, path, body (a string is sent raw), location, field]
  const cases: Array<[string, string, string, unknown, string, string]> = [
    ["path id (module)", "GET", "/api/v1/modules/a%00b", undefined, "path", "name"],
    ["path id (channel)", "DELETE", "/api/v1/channels/%00", undefined, "path", "id"],
    ["path id (agent state)", "GET", "/api/v1/agents/x%00/state", undefined, "path", "node_id"],
    ["cursor", "GET", "/api/v1/operators?cursor=%00", undefined, "query", "cursor"],
    ["filter", "GET", "/api/v1/audit?operator=bob%00", undefined, "query", "operator"],
    ["operator name", "POST", "/api/v1/operators", { name: "bo\u0000b", public_key: KEY }, "body", "name"],
    ["secret name", "POST", "/api/v1/secrets", { name: "s\u0000", value: "v" }, "body", "name"],
    ["selector", "POST", "/api/v1/assignments", assignment("role=\u0000web"), "body", "selector"],
    ["maintenance reason", "POST", "/api/v1/maintenance-windows", window("x\u0000"), "body", "reason"],
    ["raw YAML", "POST", "/api/v1/modules", { name: "m1", content: YAML }, "body", "content"],
    ["nested config", "POST", "/api/v1/channels", webhook({ h: { "x-a": "b\u0000" } }), "body", "config.h.x-a"],
    ["object key", "POST", "/api/v1/channels", webhook({ "u\u0000rl": "x" }), "body", "config.u\u0000rl"],
    ["lone surrogate", "POST", "/api/v1/maintenance-windows", LONE, "body", "reason"],
  ];
  for (const [what, method, path, body, location, field] of cases) {
    const payload = typeof body === "string" ? { raw: body } : body !== undefined ? { body } : {};
    const r = await call(gw.url, method, path, { token, ...payload });
    bad(t, r, "invalid_characters", what);
    t.equal(r.body?.location, location, `${what}: location`);
    t.equal(r.body?.field, field, `${what}: field`);
  }
  // Nothing was created by the refused requests.
  t.same((await call(gw.url, "GET", "/api/v1/maintenance-windows", { token })).body.windows, []);
  t.same((await call(gw.url, "GET", "/api/v1/modules", { token })).body.modules, []);
});

t.test("a JSON body that is not UTF-8 is 400 invalid_encoding and nothing is stored", async (t) => {
  const post = (bytes: Buffer) =>
    fetch(`${gw.url}/api/v1/secrets`, {
      method: "POST",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: bytes,
    });
  // A lone continuation byte, a truncated 3-byte sequence and an overlong "/" inside the value.
  for (const [what, bytes] of [
    ["0xff", [0xff]],
    ["truncated sequence", [0xe2, 0x82]],
    ["overlong encoding", [0xc0, 0xaf]],
  ] as const) {
    const name = `enc-${what.replace(/\W/g, "-")}`;
    const body = Buffer.concat([Buffer.from(`{"name":"${name}","value":"a`), Buffer.from(bytes), Buffer.from('b"}')]);
    const res = await post(body);
    const answer = {
      status: res.status,
      type: res.headers.get("content-type") ?? "",
      text: "",
      body: await res.json(),
    };
    bad(t, answer, "invalid_encoding", what);
    const stored = await call(gw.url, "GET", `/api/v1/secrets/${name}`, { token });
    t.equal(stored.status, 404, `${what}: no secret was stored`);
  }
  // Valid multi-byte UTF-8 still goes through unchanged.
  const ok = await post(Buffer.from(JSON.stringify({ name: "enc-ok", value: "été 🔑" })));
  t.equal(ok.status, 201, "valid UTF-8 is accepted");
});

t.test("the same NUL sent straight to each service over NATS is INVALID_ARGUMENT", async (t) => {
  const c = await clients("direct");
  t.teardown(() => c.nc.close());
  const now = Date.now();
  const restriction = (nodeIds: string[], tags: Record<string, string>) => ({
    name: "s1",
    value: "v",
    restriction: { nodeIds, tags },
  });
  const window = { startsAt: now, endsAt: now + 60_000, reason: "r\u0000" };
  const channel = { name: "c", channelType: "webhook", config: { headers: { "x-a": "\u0000" } } };
  const cases: Array<[string, string, () => Promise<unknown>]> = [
    ["auth GetOperator", "id", () => c.auth.getOperator({ id: "a\u0000" }, as)],
    ["auth ListOperators cursor", "cursor", () => c.auth.listOperators({ cursor: "\u0000" }, as)],
    ["agents GetAgent", "id", () => c.agents.getAgent({ id: "x\u0000" }, as)],
    ["audit ListEvents filter", "filter.operator", () => c.audit.listEvents({ filter: { operator: "b\u0000" } }, as)],
    ["notify CreateWindow", "reason", () => c.notify.createWindow(window, as)],
    ["notify CreateChannel Struct", "config.headers.x-a", () => c.notify.createChannel(channel, as)],
    ["secrets map", "restriction.tags.r\u0000", () => c.secrets.createSecret(restriction([], { "r\u0000": "" }), as)],
    ["secrets repeated", "restriction.nodeIds.1", () => c.secrets.createSecret(restriction(["a", "b\u0000"], {}), as)],
    ["state UploadModule YAML", "content", () => c.state.uploadModule({ name: "m1", content: "#\u0000" }, as)],
    ["state CreateAssignment", "selector", () => c.state.createAssignment({ name: "a", selector: "x=\u0000" }, as)],
    ["terminal ListSessions cursor", "cursor", () => c.terminal.listSessions({ cursor: "\u0000" }, as)],
  ];
  for (const [what, field, fn] of cases) {
    const e = await refusal(fn());
    t.ok(e instanceof OrchError, `${what}: refused`);
    t.equal(e?.code, "INVALID_ARGUMENT", `${what}: INVALID_ARGUMENT (got ${e?.code} ${e?.reason})`);
    t.equal(e?.reason, "invalid_characters", `${what}: invalid_characters`);
    t.equal(e?.details.field, field, `${what}: field`);
  }
});

t.test("every list route answers a garbage cursor with 400 invalid_cursor", async (t) => {
  const hasCursor = (q: z.ZodType | undefined) => q !== undefined && "cursor" in ((q as z.ZodObject).shape ?? {});
  const lists = gw.routes.filter((r) => r.method === "GET" && hasCursor(r.query));
  t.ok(lists.length >= 12, `${lists.length} list routes with a cursor`);
  const concrete = (p: string) =>
    p.replace("{node_id}", "0123456789abcdef0123456789abcdef").replace(/\{[^}]+\}/g, "01J0000000000000000000000A");
  for (const r of lists) {
    for (const cursor of ["not a cursor!", "zz%2F..%2F", "x".repeat(199)]) {
      const res = await call(gw.url, "GET", `${concrete(r.path)}?cursor=${cursor}`, { token });
      bad(t, res, "invalid_cursor", `${r.path} cursor=${cursor.slice(0, 20)}`);
    }
  }
  // A cursor a list handed out still pages.
  const at = Math.floor(Date.now() / 1000) + 3600;
  for (let i = 0; i < 3; i++) {
    const body = { starts_at: at + i, ends_at: at + 60, reason: `w${i}` };
    t.equal((await call(gw.url, "POST", "/api/v1/maintenance-windows", { token, body })).status, 201);
  }
  const p1 = await call(gw.url, "GET", "/api/v1/maintenance-windows?limit=2", { token });
  t.equal(p1.body.windows.length, 2);
  const p2 = await call(gw.url, "GET", `/api/v1/maintenance-windows?limit=2&cursor=${p1.body.next_cursor}`, { token });
  t.equal(p2.status, 200);
  t.equal(p2.body.windows.length, 1);
});

t.test("each service refuses a cursor it did not hand out, whoever calls", async (t) => {
  const c = await clients("direct-cursor");
  t.teardown(() => c.nc.close());
  const cursor = "garbage!";
  const calls: Array<[string, () => Promise<unknown>]> = [
    ["auth ListOperators", () => c.auth.listOperators({ cursor }, as)],
    ["agents ListAgents", () => c.agents.listAgents({ cursor }, as)],
    ["notify ListWindows", () => c.notify.listWindows({ cursor }, as)],
    ["notify ListChannels", () => c.notify.listChannels({ cursor }, as)],
    ["notify ListDeliveries", () => c.notify.listDeliveries({ channelId: "01J0000000000000000000000A", cursor }, as)],
    ["notify ListNotifications", () => c.notify.listNotifications({ cursor }, as)],
    ["secrets ListSecrets", () => c.secrets.listSecrets({ cursor }, as)],
    ["state ListModules", () => c.state.listModules({ cursor }, as)],
    ["state ListAssignments", () => c.state.listAssignments({ cursor }, as)],
    ["state ListOperations", () => c.state.listOperations({ cursor }, as)],
    ["state ListDrift", () => c.state.listDrift({ nodeId: "0123456789abcdef0123456789abcdef", cursor }, as)],
    ["terminal ListSessions", () => c.terminal.listSessions({ cursor }, as)],
  ];
  for (const [what, fn] of calls) {
    const e = await refusal(fn());
    t.equal(e?.code, "INVALID_ARGUMENT", `${what}: INVALID_ARGUMENT`);
    t.equal(e?.reason, "invalid_cursor", `${what}: invalid_cursor`);
  }
});

t.test("deeply nested JSON is 400 too_deep and the gateway keeps serving", async (t) => {
  let config: unknown = "x";
  for (let i = 0; i < 1000; i++) config = { a: config };
  const body = { name: "deep", channel_type: "webhook", config };
  const deep = await call(gw.url, "POST", "/api/v1/channels", { token, body });
  bad(t, deep, "too_deep", "channel config nested 1000 levels");
  const raw = "[".repeat(500_000) + "]".repeat(500_000);
  const huge = await call(gw.url, "POST", "/api/v1/channels", { token, raw });
  bad(t, huge, "too_deep", "500,000 nested arrays");
  // Brackets inside strings are text, not nesting.
  const brackets = { starts_at: 1, ends_at: 2, reason: "[".repeat(100) };
  const inString = await call(gw.url, "POST", "/api/v1/maintenance-windows", { token, body: brackets });
  t.not(inString.body?.code, "too_deep");
  t.equal((await call(gw.url, "GET", "/api/v1/status")).status, 200, "still serving");
});

t.test("the audit event stream (written past fastify's send) carries the security headers", async (t) => {
  const ac = new AbortController();
  const headers = { authorization: `Bearer ${token}` };
  const res = await fetch(`${gw.url}/api/v1/audit/stream`, { headers, signal: ac.signal });
  t.equal(res.status, 200);
  t.match(res.headers.get("content-type"), /^text\/event-stream/);
  t.equal(res.headers.get("x-content-type-options"), "nosniff");
  t.equal(res.headers.get("content-security-policy"), "default-src 'none'; frame-ancestors 'none'");
  t.equal(res.headers.get("referrer-policy"), "no-referrer");
  ac.abort();
  await res.body?.cancel().catch(() => {});
});

t.test("an internal error in a route is logged with the request id", async (t) => {
  const client = new pg.Client({ connectionString: stack.db.url });
  await client.connect();
  t.teardown(() => client.end());
  await client.query("ALTER TABLE notify.maintenance_windows RENAME TO maintenance_windows_gone");
  try {
    const r = await call(gw.url, "GET", "/api/v1/maintenance-windows", { token });
    t.equal(r.status, 500);
    t.equal(r.body.code, "internal");
    t.notMatch(r.text, /maintenance_windows|relation/, "the cause stays out of the response");
    const id = r.body.request_id as string;
    t.ok(id, "the problem carries the request id");
    const lines = gwLog.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    const line = lines.find((l) => l.requestId === id);
    t.ok(line, "a log line carries the request id");
    t.equal(line?.level, 50, "at error level");
  } finally {
    await client.query("ALTER TABLE notify.maintenance_windows_gone RENAME TO maintenance_windows");
  }
  t.equal((await call(gw.url, "GET", "/api/v1/maintenance-windows", { token })).status, 200);
});
