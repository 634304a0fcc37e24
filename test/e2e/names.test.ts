// Names, not raw ids, in what people read: every audit summary, Inbox notification, delivered
// message and problem detail about an object that has a name names it by that name (the ids stay
// in the structured fields), and `audit --agent` finds every event about the agent, by name or by
// node id: terminal sessions and refused secrets too, not only events whose actor or target is it.
// Real processes: auth, agents, secrets, state, audit, notify, terminal, gateway and an orch-agent.
// Needs `npm run build`.
import t from "tap";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { NODE_ID_RE as NODE_ID_RE_ANCHORED, ULID_CHARS } from "@orch/contracts";
import { ed25519, eventually } from "@orch/kit/testing";
import { cli } from "../../cli/test/helpers/cli.js";
import { startReceiver } from "../../services/notify/test/harness.js";
import { startStateStack } from "./lib/state-stack.js";

// The id rules of packages/contracts/src/rules/ids.ts, unanchored: an id anywhere in a text.
const ULID_RE = new RegExp(`\\b[${ULID_CHARS}]{26}\\b`);
const NODE_ID_RE = new RegExp(`\\b${NODE_ID_RE_ANCHORED.source.slice(1, -1)}\\b`);

const transcripts = mkdtempSync(join(tmpdir(), "orch-e2e-names-transcripts-"));
t.teardown(() => rmSync(transcripts, { recursive: true, force: true }));
const rx = await startReceiver();
t.teardown(() => rx.close());
const { linkPort, system, agents, dir } = await startStateStack(t, {
  name: "names",
  extraServices: ["audit", "notify", "terminal"],
  env: {
    ORCH_TERMINAL_TRANSCRIPT_DIR: transcripts,
    ORCH_NOTIFY_ALLOW_PRIVATE_TARGETS: "true",
    ORCH_NOTIFY_POLL_MS: "100",
    ORCH_NOTIFY_OPERATORS_CACHE_MS: "0",
    ORCH_NOTIFY_CREDENTIALS_KEY: Buffer.alloc(32, 7).toString("hex"),
  },
});
const token = await system.login(system.admin);
type Res = Awaited<ReturnType<typeof system.api>>;
const api = (method: string, path: string, body?: unknown) =>
  system.api(method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
const must = async (p: Promise<Res>, status: number) => {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
};

interface Event {
  id: string;
  event_type: string;
  summary: string;
  actor: { id: string; name: string; type: string };
  target: { id: string; name: string; type: string };
  metadata: Record<string, unknown>;
}
/** Every stored event matching the query, newest first. */
async function audit(query = ""): Promise<Event[]> {
  const out: Event[] = [];
  let cursor: string | null = null;
  do {
    const page = await must(api("GET", `/audit?limit=500${query}${cursor ? `&cursor=${cursor}` : ""}`), 200);
    out.push(...page.events);
    cursor = page.next_cursor;
  } while (cursor);
  return out;
}

// --- A broad set of actions, each through the API as an operator would do it. ---
const agent = agents.spawn(["--server", `127.0.0.1:${linkPort}`, "--shell", "/bin/sh"]);
const nodeId = await agent.nodeId();
await eventually(async () => (await api("GET", `/agents/${nodeId}`)).body?.connected === true, 20_000);
await must(api("POST", `/agents/${nodeId}`, { status: "approved", name: "web-1" }), 200);
await must(api("PUT", `/agents/web-1/tags`, { tags: { env: "names" } }), 200);
const olga = ed25519();
const olgaId = (await must(api("POST", "/operators", { name: "olga", public_key: olga.publicKeyHex }), 201)).id;
const channel = await must(
  api("POST", "/channels", {
    name: "ops-hook",
    channel_type: "webhook",
    config: { url: `${rx.url}/hook`, event_types: ["secret.denied"] },
  }),
  201,
);

await must(
  api("POST", "/modules", {
    name: "motd",
    content: `name: motd\nresources:\n  - { id: motd, type: file, path: '${dir}/motd', content: "hello\\n" }\n`,
  }),
  201,
);
const applied = await must(api("POST", "/agents/web-1/apply?wait=60", { modules: ["motd"] }), 200);
// A secret only another node may receive: the apply on web-1 is refused.
await must(
  api("POST", "/secrets", { name: "api_token", value: "v-1", restriction: { node_ids: ["c".repeat(32)] } }),
  201,
);
await must(
  api("POST", "/modules", {
    name: "token",
    content: `name: token\nresources:\n  - { id: conf, type: file, path: '${dir}/token', content: "{{ secrets.api_token }}" }\n`,
  }),
  201,
);
const refused = await must(api("POST", "/agents/web-1/apply?wait=60", { modules: ["token"] }), 200);

const opened = await must(api("POST", "/terminal/web-1"), 201);
await must(api("DELETE", `/terminal/session/${opened.session_id}`), 204);
await eventually(async () => {
  const s = (await api("GET", `/terminal/session/${opened.session_id}`)).body;
  return s?.status === "closed" || s?.status === "failed";
}, 30_000);

// Every event above is stored, and the refusal reached the Inbox and the channel.
const expectedTypes = [
  "agent.approved",
  "agent.tags.updated",
  "operator.created",
  "channel.created",
  "module.uploaded",
  "state.apply.succeeded",
  "state.apply.failed",
  "secret.created",
  "secret.denied",
  "terminal.session.opened",
  "terminal.session.closed",
];
await eventually(async () => {
  const types = new Set((await audit()).map((e) => e.event_type));
  return expectedTypes.every((x) => types.has(x));
}, 30_000);
const inbox = await eventually(async () => {
  const n = (await must(api("GET", "/notifications?limit=200"), 200)).notifications as Array<{
    id: string;
    event_type: string;
    summary: string;
  }>;
  return n.some((x) => x.event_type === "secret.denied") && n.some((x) => x.event_type === "state.apply.failed")
    ? n
    : undefined;
}, 30_000);
const denial = inbox.find((x) => x.event_type === "secret.denied")!;
await must(api("POST", `/notifications/${denial.id}/read`), 200);
const delivered = await eventually(async () => rx.got.find((r) => r.url === "/hook"), 30_000);
await eventually(async () => (await audit("&event_type=notification.read")).length === 1, 30_000);

/** Whether a text names something by a raw id: a ULID, or a node id once the agent has a name. */
function rawIds(text: string): string[] {
  return [ULID_RE.exec(text)?.[0], NODE_ID_RE.exec(text)?.[0], text.includes(nodeId) ? nodeId : undefined].filter(
    (x): x is string => x !== undefined,
  );
}

t.test("no audit summary names a named object by its id", async (t) => {
  const events = await audit();
  const approval = events.find((e) => e.event_type === "agent.approved")!;
  // Before its approval the agent has no name: its node id is the only way to name it then.
  const named = events.filter((e) => e.id >= approval.id);
  t.ok(named.length >= expectedTypes.length, `${named.length} events from the approval on`);
  for (const e of named) t.same(rawIds(e.summary), [], `${e.event_type}: ${e.summary}`);
  for (const e of events) t.notOk(ULID_RE.test(e.summary), `${e.event_type}: no ULID in "${e.summary}"`);
  t.ok(
    events.some((e) => e.event_type === "operator.created" && e.target.id === olgaId && e.summary.includes("olga")),
    "the operator is named, its id kept in the target",
  );
  const denied = events.find((e) => e.event_type === "secret.denied")!;
  t.match(denied.summary, /agent web-1\b/, denied.summary);
  t.match(denied.metadata, { node_id: nodeId, node_name: "web-1", reason: "secret_not_permitted" });
  t.match(approval, { target: { id: nodeId, name: "web-1", type: "agent" } }, "the node id stays in the target");
});

t.test("no notification, delivered message or problem detail names web-1 by its node id", async (t) => {
  const notifications = (await must(api("GET", "/notifications?limit=200"), 200)).notifications as Array<{
    event_type: string;
    summary: string;
  }>;
  t.ok(notifications.length >= 2);
  for (const n of notifications) t.same(rawIds(n.summary), [], `${n.event_type}: ${n.summary}`);
  const sent = JSON.parse(delivered.body) as Event;
  t.equal(sent.event_type, "secret.denied");
  t.same(rawIds(sent.summary), [], `delivered: ${sent.summary}`);
  t.match(sent.summary, /web-1/);

  t.equal(applied.status, "succeeded");
  t.equal(refused.status, "failed");
  t.equal(refused.error_code, "secret_not_permitted");
  t.match(refused.error, /agent 'web-1' is not permitted/, refused.error);
  t.same(rawIds(refused.error), [], "the operation's error names the agent");
  const deliveries = await must(api("GET", `/channels/${channel.id}/deliveries`), 200);
  t.ok(deliveries.deliveries.length >= 1);
});

t.test("audit --agent finds every event about the agent, by name and by node id", async (t) => {
  const aboutAgent = [
    "agent.approved",
    "agent.tags.updated",
    "state.apply.succeeded",
    "state.apply.failed",
    "secret.denied",
    "terminal.session.opened",
    "terminal.session.closed",
  ];
  const byName = await audit("&agent=web-1");
  const byId = await audit(`&agent=${nodeId}`);
  const types = new Set(byName.map((e) => e.event_type));
  for (const type of aboutAgent) t.ok(types.has(type), `--agent web-1 lists ${type}`);
  t.notOk(types.has("operator.created"), "nor events about others");
  t.notOk(types.has("channel.created"));
  // Before its approval the agent had no name, so those events are found by node id only.
  const approval = byName.find((e) => e.event_type === "agent.approved")!;
  t.same(
    byId.filter((e) => e.id >= approval.id).map((e) => e.id),
    byName.filter((e) => e.id >= approval.id).map((e) => e.id),
    "the same events by node id",
  );
  t.ok(
    byId.some((e) => e.id < approval.id),
    "and by node id also those from before it had a name",
  );

  // orchctl passes the filter through: the same events.
  const home = mkdtempSync(join(tmpdir(), "orch-e2e-names-cli-"));
  t.teardown(() => rmSync(home, { recursive: true, force: true }));
  const pem = join(home, "admin.pem");
  writeFileSync(pem, system.admin.privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
  const env = { ORCHCTL_HOME: join(home, "home"), HOME: home };
  const login = await cli(["--server", system.url, "login", "--key", pem], env);
  t.equal(login.code, 0, login.stderr);
  const listed = await cli(["--json", "audit", "--agent", "web-1", "--all"], env);
  t.equal(listed.code, 0, listed.stderr);
  const ids = (JSON.parse(listed.stdout).events as Event[]).map((e) => e.id);
  t.ok(
    byName.every((e) => ids.includes(e.id)),
    "orchctl audit --agent web-1 lists every event the API does",
  );
  const known = new Set(byId.map((e) => e.id));
  t.ok(
    ids.every((id) => known.has(id)),
    "and only events about the agent",
  );
});
