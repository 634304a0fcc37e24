import t from "tap";
import { fromBinary } from "@bufbuild/protobuf";
import { AuditEventSchema, JOIN_TOKEN_RE, type AuditEvent } from "@orch/contracts";
import { ed25519, eventually } from "@orch/kit/testing";
import { call, login } from "./harness.js";
import { startAgentsStack } from "./agents-stack.js";

// /api/v1/join-tokens through the real gateway and agents service: 201 with the token once, the
// 400s that never reach the bus, 403 for operators, 404 and idempotent revoke.
const stack = await startAgentsStack();
const { nats, admin, gw } = stack;
const spy = await nats.connect("spy");
const busSubjects: string[] = [];
spy.subscribe("orch.agents.>", { callback: (_e, m) => void busSubjects.push(m.subject) });
const audit: AuditEvent[] = [];
spy.subscribe("audit.>", { callback: (_e, m) => void audit.push(fromBinary(AuditEventSchema, m.data)) });
t.teardown(() => stack.stop());

const token = await login(gw.url, admin);
const opKey = ed25519();
const added = await call(gw.url, "POST", "/api/v1/operators", {
  token,
  body: { name: "olga", public_key: opKey.publicKeyHex, role: "operator" },
});
if (added.status !== 201) throw new Error(`operator: ${added.status} ${added.text}`);
const opToken = await login(gw.url, opKey);

t.test("create → 201 with the token once; list and revoke never show it", async (t) => {
  const r = await call(gw.url, "POST", "/api/v1/join-tokens", {
    token,
    body: { ttl_s: 3600, max_uses: 2, tags: { env: "test" }, name_prefix: "web", description: "rack 4" },
  });
  t.equal(r.status, 201, r.text);
  t.match(r.body.token, JOIN_TOKEN_RE);
  t.match(r.body.join_token, {
    id: r.body.token.slice(4, 30),
    tags: { env: "test" },
    name_prefix: "web",
    max_uses: 2,
    uses: 0,
    description: "rack 4",
    revoked_at: null,
    created_by_name: "admin",
    state: "active",
  });
  const id = r.body.join_token.id as string;
  const secret = (r.body.token as string).split(".")[1]!;

  const list = await call(gw.url, "GET", "/api/v1/join-tokens", { token });
  t.equal(list.status, 200);
  t.equal(list.body.join_tokens[0].id, id);
  t.notOk(list.text.includes(secret), "the list never carries the secret");

  const del = await call(gw.url, "DELETE", `/api/v1/join-tokens/${id}`, { token });
  t.equal(del.status, 200, del.text);
  t.equal(del.body.state, "revoked");
  const again = await call(gw.url, "DELETE", `/api/v1/join-tokens/${id}`, { token });
  t.equal(again.status, 200, "revoking again is fine");
  t.equal(again.body.revoked_at, del.body.revoked_at);

  await eventually(() => audit.find((e) => e.eventType === "join_token.revoked"));
  t.notOk(JSON.stringify(audit).includes(secret), "no event carries the secret");
});

t.test("bad input → 400 naming the field, nothing reaches the bus", async (t) => {
  const before = busSubjects.length;
  const cases: Array<[Record<string, unknown>, string, string]> = [
    [{}, "invalid_request", "ttl_s"],
    [{ ttl_s: 30 }, "invalid_ttl", "ttl_s"],
    [{ ttl_s: 3600, max_uses: 1.5 }, "invalid_max_uses", "max_uses"],
    [{ ttl_s: 3600, name_prefix: "-web" }, "invalid_name_prefix", "name_prefix"],
    [{ ttl_s: 3600, tags: { "bad key": "x" } }, "invalid_tag_key", "tags"],
    [{ ttl_s: 3600, description: "x".repeat(201) }, "invalid_description", "description"],
  ];
  for (const [body, code, field] of cases) {
    const r = await call(gw.url, "POST", "/api/v1/join-tokens", { token, body });
    t.equal(r.status, 400, `${JSON.stringify(body).slice(0, 60)} → 400`);
    t.equal(r.body?.code, code);
    t.match(r.body?.errors?.[0]?.field ?? r.body?.field, field);
  }
  t.equal(busSubjects.length, before, "no request left the gateway");
});

t.test("operators get 403, unknown ids 404", async (t) => {
  for (const [method, path, body] of [
    ["POST", "/api/v1/join-tokens", { ttl_s: 3600 }],
    ["GET", "/api/v1/join-tokens", undefined],
    ["DELETE", "/api/v1/join-tokens/01aaaaaaaaaaaaaaaaaaaaaaaa", undefined],
  ] as const) {
    const r = await call(gw.url, method, path, { token: opToken, ...(body ? { body } : {}) });
    t.equal(r.status, 403, `${method} ${path} as operator`);
    t.equal(r.body?.code, "admin_required");
  }
  const nf = await call(gw.url, "DELETE", "/api/v1/join-tokens/01aaaaaaaaaaaaaaaaaaaaaaaa", { token });
  t.equal(nf.status, 404);
  t.equal(nf.body?.code, "join_token_not_found");
});
