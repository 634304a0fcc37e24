import t, { type Test } from "tap";
import { matchSelector, parseSelector, type Agent, type ListAgentsRequest } from "@orch/contracts";
import { OrchError, type Actor } from "@orch/kit";
import { createTestDatabase, startNats } from "@orch/kit/testing";
import { ADMIN, agentsClient, startAgentsService } from "./harness.js";

// ListAgents' selector filter and SummarizeAgents over a registry of 1,300 agents (more than two
// scan batches), for an unscoped admin and a scoped operator: a filter only ever narrows the scope.
const nats = await startNats();
const db = await createTestDatabase();
const svc = await startAgentsService(nats, db, { insecure: true });
const nc = await nats.connect("caller");
const { c } = agentsClient(nc);
t.teardown(async () => {
  await svc.stop();
  await db.drop();
  await nats.stop();
});

const N = 1300;
const ENVS = ["prod", "staging", "dev"];
const TEAMS = ["a", "b", "c", "d", "e"];
const nodeId = (i: number) => i.toString(16).padStart(32, "0");

interface Seed {
  node_id: string;
  name: string;
  status: "pending" | "approved" | "rejected";
  connected: boolean;
  tags: Record<string, string>;
  attributes: Record<string, string>;
}
const seeds: Seed[] = Array.from({ length: N }, (_, i) => {
  const status = i % 10 === 0 ? "pending" : i % 10 === 1 ? "rejected" : "approved";
  return {
    node_id: nodeId(i + 1),
    name: status === "approved" ? `host-${i}` : "",
    status,
    // Pending agents have a live link too (they wait connected); they must not count as "connected".
    connected: i % 2 === 0,
    tags: { env: ENVS[i % 3]!, team: TEAMS[i % 5]!, ...(i % 400 === 7 ? { rare: "yes" } : {}) },
    attributes: { os: i % 4 === 0 ? "freebsd" : "linux" },
  };
});
// Connected rows carry this live replica so the orphan sweep leaves them alone.
await svc.deps.pool.query(
  `INSERT INTO agents (node_id, public_key, name, status, connected, replica, session, tags, attributes, first_seen, last_seen)
   SELECT s.node_id, md5(s.node_id) || md5(s.node_id), NULLIF(s.name, ''), s.status, s.connected,
          CASE WHEN s.connected THEN $2 END, CASE WHEN s.connected THEN 's' END, s.tags, s.attributes, 1, 1
     FROM jsonb_to_recordset($1::jsonb)
       AS s(node_id text, name text, status text, connected boolean, tags jsonb, attributes jsonb)`,
  [JSON.stringify(seeds), svc.svc.replica],
);

const SCOPED: Actor = { id: "01SCOPED", name: "scoped", type: "operator", role: "operator", scope: "team in (a,b)" };
const as = (actor: Actor) => ({ actor });

/** The node ids an actor should see under a selector, computed from the seeds with the shared matcher. */
function expected(actor: Actor, selector: string, status = ""): string[] {
  const scope = actor.scope ? parseSelector(actor.scope) : null;
  const sel = selector ? parseSelector(selector) : null;
  return seeds
    .filter((s) => {
      const target = { node_id: s.node_id, name: s.name, tags: s.tags, attributes: s.attributes };
      return (
        (!scope || matchSelector(scope, target)) &&
        (!sel || matchSelector(sel, target)) &&
        (!status || s.status === status)
      );
    })
    .map((s) => s.node_id);
}

/** Every page of a listing; checks each page is full unless it is the last. */
async function pages(t: Test, actor: Actor, req: Partial<ListAgentsRequest>) {
  const all: Agent[] = [];
  const sizes: number[] = [];
  let cursor = "";
  for (let i = 0; i < 100; i++) {
    const r = await c.listAgents({ limit: 0, status: "", selector: "", ...req, cursor }, as(actor));
    all.push(...r.agents);
    sizes.push(r.agents.length);
    if (!r.nextCursor) break;
    t.equal(r.agents.length, req.limit, "a page with a next cursor is full");
    cursor = r.nextCursor;
  }
  return { ids: all.map((a) => a.nodeId), sizes, agents: all };
}

async function refusedSelector(t: Test, p: Promise<unknown>) {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  t.ok(err instanceof OrchError, "refused");
  const e = err as OrchError;
  t.equal(e.code, "INVALID_ARGUMENT");
  t.equal(e.reason, "invalid_selector");
  t.equal(e.details.field, "selector");
  t.equal(e.details.position, 4, "names where the selector broke");
  t.match(e.message, /^selector: expected a value, found .\(. at position 4$/, "the parser's message");
}

t.test("a selector filters the listing and keyset paging walks every match", async (t) => {
  const want = expected(ADMIN, "env=prod,attr.os=linux");
  t.ok(want.length > 300, `${want.length} matches, spread over the registry`);
  const got = await pages(t, ADMIN, { limit: 70, selector: "env=prod,attr.os=linux" });
  t.same(got.ids, want, "exactly the matches, in node id order, each once");
  t.equal(got.sizes.at(-1), want.length % 70 || 70, "only the last page is short");
  for (const a of got.agents.slice(0, 20)) t.equal(a.tags.env, "prod");
});

t.test("sparse matches far apart still fill pages across scan batches", async (t) => {
  const want = expected(ADMIN, "rare=yes");
  t.same(want, [nodeId(8), nodeId(408), nodeId(808), nodeId(1208)], "four matches, ~400 rows apart");
  const first = await c.listAgents({ limit: 3, cursor: "", status: "", selector: "rare=yes" }, as(ADMIN));
  t.same(
    first.agents.map((a) => a.nodeId),
    want.slice(0, 3),
    "the first page is full although its matches span 1,000 rows",
  );
  t.equal(first.nextCursor, nodeId(808));
  const second = await c.listAgents(
    { limit: 3, cursor: first.nextCursor, status: "", selector: "rare=yes" },
    as(ADMIN),
  );
  t.same(
    second.agents.map((a) => a.nodeId),
    [nodeId(1208)],
  );
  t.equal(second.nextCursor, "", "no cursor after the last match");

  const exact = await c.listAgents({ limit: 4, cursor: "", status: "", selector: "rare=yes" }, as(ADMIN));
  t.equal(exact.agents.length, 4);
  t.equal(exact.nextCursor, "", "a page that holds the last match hands out no cursor");

  const none = await c.listAgents({ limit: 10, cursor: "", status: "", selector: "rare=no" }, as(ADMIN));
  t.same(none.agents, []);
  t.equal(none.nextCursor, "");
});

t.test("selector and status combine", async (t) => {
  const want = expected(ADMIN, "env=staging", "pending");
  t.ok(want.length > 7, "more than one page");
  const got = await pages(t, ADMIN, { limit: 7, selector: "env=staging", status: "pending" });
  t.same(got.ids, want);
  t.ok(
    got.agents.every((a) => a.status === "pending" && a.tags.env === "staging"),
    "every agent is pending and in staging",
  );
});

t.test("a scoped operator's selector is AND-ed with its scope and never widens it", async (t) => {
  const scopeOnly = await pages(t, SCOPED, { limit: 200 });
  t.same(scopeOnly.ids, expected(SCOPED, ""), "no selector: the scope");

  const narrowed = await pages(t, SCOPED, { limit: 50, selector: "env=staging" });
  t.same(narrowed.ids, expected(SCOPED, "env=staging"));
  t.ok(
    narrowed.agents.every((a) => ["a", "b"].includes(a.tags.team!) && a.tags.env === "staging"),
    "scope and selector both hold",
  );

  const outside = await pages(t, SCOPED, { limit: 50, selector: "team=c" });
  t.same(outside.ids, [], "asking for agents outside the scope finds none");
  const everything = await pages(t, SCOPED, { limit: 500, selector: "*" });
  t.same(everything.ids, scopeOnly.ids, "'*' is the scope, not the registry");
  const byId = await pages(t, SCOPED, { limit: 10, selector: `node_id=${nodeId(3)}` });
  t.same(byId.ids, [], "an agent outside the scope cannot be probed by node id");
});

t.test("an invalid selector is refused with the parser's message", async (t) => {
  await refusedSelector(t, c.listAgents({ limit: 10, cursor: "", status: "", selector: "env=(prod" }, as(ADMIN)));
  await refusedSelector(t, c.summarizeAgents({ selector: "env=(prod" }, as(SCOPED)));
});

/** Counts of what `expected` returns, from the seeds. */
function counts(actor: Actor, selector: string) {
  const ids = new Set(expected(actor, selector));
  const rows = seeds.filter((s) => ids.has(s.node_id));
  const approved = rows.filter((s) => s.status === "approved");
  return {
    total: rows.length,
    connected: approved.filter((s) => s.connected).length,
    disconnected: approved.filter((s) => !s.connected).length,
    pending: rows.filter((s) => s.status === "pending").length,
    approved: approved.length,
    rejected: rows.filter((s) => s.status === "rejected").length,
  };
}

const plain = (m: object) => {
  const { $typeName: _t, ...rest } = m as Record<string, unknown>;
  return rest;
};

t.test("summary counts, unfiltered, filtered, scoped and both", async (t) => {
  const all = plain(await c.summarizeAgents({ selector: "" }, as(ADMIN)));
  t.same(all, counts(ADMIN, ""), "the whole registry");
  t.equal(all.total, N);
  t.ok((all.connected as number) > 0 && (all.disconnected as number) > 0 && (all.pending as number) > 0);
  t.equal(
    (all.connected as number) + (all.disconnected as number),
    all.approved,
    "connected and disconnected split the approved agents",
  );
  t.ok(
    (all.connected as number) < seeds.filter((s) => s.connected).length,
    "pending and rejected agents with a live link are not counted as connected",
  );
  t.same(plain(await c.summarizeAgents({ selector: "*" }, as(ADMIN))), all, "'*' counts everything");
  t.same(plain(await c.summarizeAgents({ selector: "env=dev" }, as(ADMIN))), counts(ADMIN, "env=dev"));
  t.same(plain(await c.summarizeAgents({ selector: "" }, as(SCOPED))), counts(SCOPED, ""), "the scope");
  t.same(
    plain(await c.summarizeAgents({ selector: "attr.os=freebsd" }, as(SCOPED))),
    counts(SCOPED, "attr.os=freebsd"),
    "scope AND selector",
  );
  t.same(
    plain(await c.summarizeAgents({ selector: "team=e" }, as(SCOPED))),
    { total: 0, connected: 0, disconnected: 0, pending: 0, approved: 0, rejected: 0 },
    "nothing outside the scope is counted",
  );
});

t.test("the counts follow the registry", async (t) => {
  const before = plain(await c.summarizeAgents({ selector: "rare=yes" }, as(ADMIN)));
  await svc.deps.pool.query("UPDATE agents SET status = 'rejected', connected = false WHERE node_id = $1", [nodeId(8)]);
  const after = plain(await c.summarizeAgents({ selector: "rare=yes" }, as(ADMIN)));
  t.equal(after.total, before.total);
  t.equal(after.rejected, (before.rejected as number) + 1);
  t.equal(after.approved, (before.approved as number) - 1);
});
