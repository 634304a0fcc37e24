import t from "tap";
import { createSocket } from "node:dgram";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { eventually } from "@orch/kit/testing";
import { call, login } from "../../services/gateway/test/harness.js";
import { startAgentsStack } from "../../services/gateway/test/agents-stack.js";
import { connectSimAgent, defaultAttributes, linkClient, simKey, type SimAgent } from "../../bench/lib/sim-agent.js";
import { cli } from "./helpers/cli.js";

// orchctl against the real gateway, auth and agents services (in-process) with simulated agent links.
// Unicast discovery goes to agents.discovery_port only, inside agents.discovery_networks (loopback here).
const discoverySock = createSocket("udp4");
await new Promise<void>((r) => discoverySock.bind(0, "127.0.0.1", r));
discoverySock.unref();
const stack = await startAgentsStack({
  agents: { discovery_port: discoverySock.address().port, discovery_networks: ["127.0.0.0/8"] },
});
const { admin, agentsSvc, gw } = stack;
const grpc = linkClient(`127.0.0.1:${agentsSvc.linkPort}`);
const sims: SimAgent[] = [];
t.teardown(async () => {
  for (const s of sims) s.close();
  grpc.close();
  await stack.stop();
});

// An orchctl home logged in as a plain operator (agents commands need no admin).
const root = t.testdir();
const env = { HOME: root, ORCHCTL_HOME: join(root, "orchctl") };
if ((await cli(["keygen"], env)).code !== 0) throw new Error("keygen failed");
const adminToken = await login(gw.url, admin);
const pub = (await readFile(join(env.ORCHCTL_HOME, "id_ed25519.pub"), "utf8")).trim();
if (
  (
    await call(gw.url, "POST", "/api/v1/operators", {
      token: adminToken,
      body: { name: "ops", public_key: pub, role: "operator" },
    })
  ).status !== 201
)
  throw new Error("operator not created");
const loggedIn = await cli(["login", "--server", gw.url], env);
if (loggedIn.code !== 0) throw new Error(loggedIn.stderr);

const run = (...args: string[]) => cli(args, env);
const json = async (...args: string[]) => {
  const r = await run(...args, "--json");
  if (r.code !== 0) throw new Error(`orchctl ${args.join(" ")}: ${r.stderr}`);
  return JSON.parse(r.stdout);
};

const keys = [simKey(), simKey(), simKey()].sort((a, b) => a.nodeId.localeCompare(b.nodeId));
for (const [i, k] of keys.entries())
  sims.push(connectSimAgent(grpc, k, { attributes: defaultAttributes(i, k.nodeId), version: "1.2.3" }));
await Promise.all(sims.map((s) => s.welcome));
const [first, second, third] = keys.map((k) => k.nodeId) as [string, string, string];

t.test(
  "agents list: a table of name, short id, status, online, version, tags, last seen; --status, --all, --json",
  async (t) => {
    const r = await run("agents", "list");
    t.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split("\n");
    t.match(lines[0], /^NAME\s+ID\s+STATUS\s+ONLINE\s+VERSION\s+TAGS\s+LAST SEEN$/);
    t.equal(lines.length, 4);
    t.match(
      lines[1],
      new RegExp(`^-\\s+${first.slice(0, 12)}\\s+pending\\s+yes\\s+1\\.2\\.3\\s+-\\s+(just now|\\d+s ago)$`),
    );

    const doc = await json("agents", "list", "--all", "--limit", "1");
    t.same(
      doc.agents.map((a: { node_id: string }) => a.node_id),
      [first, second, third],
      "--all followed the cursor page by page",
    );
    t.equal(doc.has_more, false);
    const api = await call(gw.url, "GET", "/api/v1/agents", { token: adminToken });
    t.same(
      (await json("agents", "list")).agents.map((a: { node_id: string }) => a.node_id),
      api.body.agents.map((a: { node_id: string }) => a.node_id),
    );

    const page = await run("agents", "list", "--limit", "2");
    t.match(page.stderr, `--cursor ${second}`);
    t.equal(
      (await run("agents", "list", "--status", "approved")).stdout,
      "NAME  ID  STATUS  ONLINE  VERSION  TAGS  LAST SEEN\n",
    );
    const bad = await run("agents", "list", "--status", "lost");
    t.equal(bad.code, 1);
    t.match(bad.stderr, /--status must be one of pending, approved, rejected/);
  },
);

t.test("agents approve by short id; invalid or duplicate names are the server's errors", async (t) => {
  const r = await run("agents", "approve", first.slice(0, 12), "--name", "web-1");
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, `Approved agent web-1 (${first})\n`);

  const bad = await run("agents", "approve", second, "--name", "Web_1");
  t.equal(bad.code, 1);
  t.match(bad.stderr, /^error: body field 'name' must be a DNS label.* \(invalid_name\)\n$/);
  const dup = await run("agents", "approve", second, "--name", "web-1", "--json");
  t.equal(dup.code, 1);
  t.match(JSON.parse(dup.stdout), { status: 409, code: "name_taken" });
  const missing = await run("agents", "approve", second);
  t.equal(missing.code, 1);
  t.match(missing.stderr, /required option '--name <name>'/);

  const shown = await json("agents", "show", "web-1");
  t.match(shown, { node_id: first, name: "web-1", status: "approved", connected: true, version: "1.2.3" });
  const text = await run("agents", "show", "web-1");
  t.match(text.stdout, /^name:\s+web-1$/m);
  t.match(text.stdout, new RegExp(`^node_id:\\s+${first}$`, "m"));
  t.match(text.stdout, /^hostname\s+sim-0$/m, "attributes are listed");

  const unknown = await run("agents", "show", "feedfacefeed");
  t.equal(unknown.code, 1);
  t.match(unknown.stderr, /\(agent_not_found\)/);
});

t.test("agents tag / untag / attrs and orchctl tags", async (t) => {
  const r = await run("agents", "tag", "web-1", "env=prod", "team/web=ops", "note=a=b");
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, "Tags of web-1: env=prod,note=a=b,team/web=ops\n");
  t.equal((await run("agents", "tag", second.slice(0, 8), "env=staging")).code, 0);

  const bad = await run("agents", "tag", "web-1", "novalue");
  t.equal(bad.code, 1);
  t.match(bad.stderr, /tag "novalue" is not key=value/);
  const badKey = await run("agents", "tag", "web-1", "Env=x");
  t.equal(badKey.code, 1);
  t.match(badKey.stderr, /\(invalid_tag_key\)/);

  const un = await run("agents", "untag", "web-1", "note", "team/web", "--json");
  t.equal(un.code, 0, un.stderr);
  t.same(JSON.parse(un.stdout).tags, { env: "prod" });

  const tags = await run("tags");
  t.equal(tags.stdout, "KEY  VALUES\nenv  prod,staging\n");
  t.same(await json("tags"), { tags: { env: ["prod", "staging"] } });

  const attrs = await run("agents", "attrs", "web-1");
  t.match(attrs.stdout, /^ATTRIBUTE\s+VALUE\n/);
  t.match(attrs.stdout, /^hostname\s+sim-0$/m);
  t.same((await json("agents", "attrs", "web-1")).attributes, defaultAttributes(0, first));
});

t.test("agents metrics: history and --latest", async (t) => {
  const none = await run("agents", "metrics", "web-1", "--latest");
  t.equal(none.code, 1);
  t.match(none.stderr, /\(no_metrics\)/);
  sims[0]!.sendMetrics();
  await new Promise((r) => setTimeout(r, 5));
  sims[0]!.sendMetrics();
  const hist = await eventually(
    async () => {
      const d = await json("agents", "metrics", "web-1", "--since", "1h");
      return d.samples.length === 2 ? d : undefined;
    },
    10_000,
    100,
  );
  t.equal(hist.node_id, first);
  const latest = await json("agents", "metrics", "web-1", "--latest");
  t.same(latest, { node_id: first, ...hist.samples[0] });
  const table = await run("agents", "metrics", "web-1", "--limit", "1");
  const lines = table.stdout.trimEnd().split("\n");
  t.match(lines[0], /^TIME\s+CPU%\s+LOAD1\s+LOAD5\s+LOAD15\s+MEMORY\s+DISK\s+RX\s+TX\s+UPTIME$/);
  t.equal(lines.length, 2);
  t.match(lines[1], /^\S+Z\s+\d+\.\d\s+.*1\.0 GiB\/4\.0 GiB\s+10\.0 GiB\/64\.0 GiB\s+976\.6 KiB\s+488\.3 KiB\s+1h0m$/);
  const badTime = await run("agents", "metrics", "web-1", "--since", "yesterday");
  t.equal(badTime.code, 1);
  t.match(badTime.stderr, /--since must be an RFC 3339 time or a duration/);
});

t.test("agents reject and rm; rm refuses an agent that is not rejected", async (t) => {
  const notRejected = await run("agents", "rm", "web-1");
  t.equal(notRejected.code, 1);
  t.match(notRejected.stderr, /\(agent_not_rejected\)/);

  const r = await run("agents", "reject", third);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, `Rejected agent ${third.slice(0, 12)} (${third})\n`);
  t.equal(await sims[2]!.ended, "agent_rejected");
  const rm = await run("agents", "rm", third.slice(0, 10), "--json");
  t.equal(rm.code, 0, rm.stderr);
  t.match(JSON.parse(rm.stdout), { removed: true, agent: { node_id: third, status: "rejected" } });
  t.equal((await call(gw.url, "GET", `/api/v1/agents/${third}`, { token: adminToken })).status, 404);
});

t.test("discover --target sends one datagram; a bad target is the server's 400", async (t) => {
  const sock = discoverySock;
  const got = new Promise<string>((r) => sock.once("message", (m) => r(m.toString())));
  t.teardown(() => sock.close());
  const target = `127.0.0.1:${sock.address().port}`;
  const r = await run("discover", "--target", target);
  t.equal(r.code, 0, r.stderr);
  t.equal(r.stdout, `Announced 127.0.0.1:${agentsSvc.linkPort} to ${target}\n`);
  t.match(JSON.parse(await got), { link: `127.0.0.1:${agentsSvc.linkPort}` });
  const bad = await run("discover", "--target", "nowhere", "--json");
  t.equal(bad.code, 1);
  t.match(JSON.parse(bad.stdout), { status: 400, code: "invalid_target" });
});
