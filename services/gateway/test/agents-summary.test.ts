import t from "tap";
import { ed25519 } from "@orch/kit/testing";
import { call, login } from "./harness.js";
import { startAgentsStack } from "./agents-stack.js";

// GET /api/v1/agents?selector= and GET /api/v1/agents/summary through the real gateway, auth and agents service.
const stack = await startAgentsStack();
const { admin, agentsDeps, agentsSvc, gw } = stack;
t.teardown(async () => {
  await stack.stop();
});

const nodeId = (i: number) => i.toString(16).padStart(32, "0");
// 12 agents: role web for even i, db for odd; i % 3 == 0 pending, else approved; approved and i % 4 == 1 connected.
const seeds = Array.from({ length: 12 }, (_, i) => ({
  node_id: nodeId(i + 1),
  status: i % 3 === 0 ? "pending" : "approved",
  name: i % 3 === 0 ? null : `host-${i}`,
  connected: i % 4 === 1,
  tags: { role: i % 2 === 0 ? "web" : "db" },
}));
await agentsDeps.pool.query(
  `INSERT INTO agents (node_id, public_key, name, status, connected, replica, session, tags, first_seen, last_seen)
   SELECT s.node_id, md5(s.node_id) || md5(s.node_id), s.name, s.status, s.connected,
          CASE WHEN s.connected THEN $2 END, CASE WHEN s.connected THEN 's' END, s.tags, 1, 1
     FROM jsonb_to_recordset($1::jsonb) AS s(node_id text, name text, status text, connected boolean, tags jsonb)`,
  [JSON.stringify(seeds), agentsSvc.replica],
);

const token = await login(gw.url, admin);
const scopedKey = ed25519();
const added = await call(gw.url, "POST", "/api/v1/operators", {
  token,
  body: { name: "webops", public_key: scopedKey.publicKeyHex, role: "operator", agent_selector: "role=web" },
});
if (added.status !== 201) throw new Error(`add operator ${added.status}: ${added.text}`);
const scoped = await login(gw.url, scopedKey);

function counts(pick: (s: (typeof seeds)[number]) => boolean) {
  const rows = seeds.filter(pick);
  const approved = rows.filter((s) => s.status === "approved");
  return {
    total: rows.length,
    connected: approved.filter((s) => s.connected).length,
    disconnected: approved.filter((s) => !s.connected).length,
    pending: rows.filter((s) => s.status === "pending").length,
    approved: approved.length,
    rejected: 0,
  };
}

t.test("summary: the static path wins over /agents/{node_id} and counts what the caller sees", async (t) => {
  const all = await call(gw.url, "GET", "/api/v1/agents/summary", { token });
  t.equal(all.status, 200, all.text);
  t.same(
    all.body,
    counts(() => true),
  );
  t.equal(all.body.total, 12);

  const db = await call(gw.url, "GET", "/api/v1/agents/summary?selector=role%3Ddb", { token });
  t.same(
    db.body,
    counts((s) => s.tags.role === "db"),
  );

  const mine = await call(gw.url, "GET", "/api/v1/agents/summary", { token: scoped });
  t.same(
    mine.body,
    counts((s) => s.tags.role === "web"),
    "a scoped operator counts its scope only",
  );
  const none = await call(gw.url, "GET", "/api/v1/agents/summary?selector=role%3Ddb", { token: scoped });
  t.equal(none.body.total, 0, "a selector cannot reach outside the scope");

  const anon = await call(gw.url, "GET", "/api/v1/agents/summary");
  t.equal(anon.status, 401, "operators only");

  const one = await call(gw.url, "GET", `/api/v1/agents/${nodeId(2)}`, { token });
  t.equal(one.body.node_id, nodeId(2), "/agents/{node_id} still routes");
});

t.test("list: ?selector filters and pages", async (t) => {
  const want = seeds.filter((s) => s.tags.role === "web").map((s) => s.node_id);
  const got: string[] = [];
  let cursor = "";
  for (let i = 0; i < 10; i++) {
    const r = await call(
      gw.url,
      "GET",
      `/api/v1/agents?selector=${encodeURIComponent("role=web")}&limit=4${cursor ? `&cursor=${cursor}` : ""}`,
      { token },
    );
    t.equal(r.status, 200, r.text);
    got.push(...r.body.agents.map((a: any) => a.node_id));
    if (!r.body.has_more) break;
    t.equal(r.body.agents.length, 4, "a page with more after it is full");
    cursor = r.body.next_cursor;
  }
  t.same(got, want);

  const scopedDb = await call(gw.url, "GET", "/api/v1/agents?selector=role%3Ddb", { token: scoped });
  t.same(scopedDb.body.agents, [], "scope AND selector");
});

t.test("an invalid selector is 400 invalid_selector on both routes", async (t) => {
  for (const path of ["/api/v1/agents", "/api/v1/agents/summary"]) {
    const r = await call(gw.url, "GET", `${path}?selector=${encodeURIComponent("role in (web")}`, { token });
    t.equal(r.status, 400, path);
    t.equal(r.body.code, "invalid_selector");
    t.match(r.body.detail, /^selector: .* at position \d+$/);
    t.equal(r.body.field, "selector");
  }
  const long = await call(gw.url, "GET", `/api/v1/agents/summary?selector=${"a".repeat(5000)}`, { token });
  t.equal(long.status, 400);
  t.equal(long.body.code, "invalid_request", "an oversized selector never reaches the bus");
});
