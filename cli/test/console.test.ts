import t from "tap";
import { chmod, mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ed25519, eventually } from "@orch/kit/testing";
import { call, login } from "../../services/gateway/test/harness.js";
import { startAgentsStack } from "../../services/gateway/test/agents-stack.js";
import { cli } from "./helpers/cli.js";

// orchctl console, passkeys and agents summary / --selector against the real gateway, auth and agents services.
const stack = await startAgentsStack();
const { admin, agentsDeps, agentsSvc, gw } = stack;
t.teardown(async () => {
  await stack.stop();
});

// An orchctl home logged in as a second admin (passkeys --operator is admin-only).
const root = t.testdir();
const env = { HOME: root, ORCHCTL_HOME: join(root, "orchctl") };
if ((await cli(["keygen"], env)).code !== 0) throw new Error("keygen failed");
const adminToken = await login(gw.url, admin);
const pub = (await readFile(join(env.ORCHCTL_HOME, "id_ed25519.pub"), "utf8")).trim();
const added = await call(gw.url, "POST", "/api/v1/operators", {
  token: adminToken,
  body: { name: "ops", public_key: pub, role: "admin" },
});
if (added.status !== 201) throw new Error(`operator not created: ${added.text}`);
const other = await call(gw.url, "POST", "/api/v1/operators", {
  token: adminToken,
  body: { name: "bob", public_key: ed25519().publicKeyHex, role: "operator" },
});
if (other.status !== 201) throw new Error(`operator not created: ${other.text}`);
const loggedIn = await cli(["login", "--server", gw.url], env);
if (loggedIn.code !== 0) throw new Error(loggedIn.stderr);

const run = (...args: string[]) => cli(args, env);
const json = async (...args: string[]) => {
  const r = await run(...args, "--json");
  if (r.code !== 0) throw new Error(`orchctl ${args.join(" ")}: ${r.stderr}`);
  return JSON.parse(r.stdout);
};
const exchange = (code: string) =>
  call(gw.url, "POST", "/api/v1/auth/console/exchange", { body: { code }, headers: { origin: gw.url } });
const codeOf = (url: string) => decodeURIComponent(new URL(url).hash.replace(/^#code=/, ""));

t.test("console --json: a login link whose code signs in once", async (t) => {
  const doc = await json("console", "--no-open");
  t.same(Object.keys(doc).sort(), ["expires_at", "url"]);
  t.match(doc.url, /\/login#code=[^&]+$/, "the code travels in the fragment");
  t.ok(doc.url.startsWith(gw.url), "on the server the CLI talks to");
  const left = Date.parse(doc.expires_at) - Date.now();
  t.ok(left > 0 && left <= 61_000, "expires within a minute");

  const first = await exchange(codeOf(doc.url));
  t.equal(first.status, 200, first.text);
  t.equal(first.body.operator.name, "ops", "signed in as the operator that asked");
  const second = await exchange(codeOf(doc.url));
  t.equal(second.status, 401, "single use");
  t.equal(second.body.code, "invalid_login_code");
});

t.test("console: prints the link, its limits, and starts a browser only when it may", async (t) => {
  const bin = join(root, "bin");
  const opened = join(root, "opened.txt");
  await mkdir(bin, { recursive: true });
  await writeFile(join(bin, "xdg-open"), `#!/bin/sh\necho "$1" >> '${opened}'\n`);
  await chmod(join(bin, "xdg-open"), 0o755);
  const gui = { ...env, PATH: `${bin}:/usr/bin:/bin`, DISPLAY: ":0" };

  const quiet = await cli(["console", "--no-open"], gui);
  t.equal(quiet.code, 0, quiet.stderr);
  const [url, limits] = quiet.stdout.trimEnd().split("\n");
  t.match(url, /^http:\/\/127\.0\.0\.1:\d+\/login#code=\S+$/, "the link alone on the first line");
  t.match(limits, /valid for 60 s, single use/);

  const headless = await cli(["console"], { ...gui, DISPLAY: undefined });
  t.equal(headless.code, 0, "no display: the link is printed, nothing is started");

  const shown = await cli(["console"], gui);
  t.equal(shown.code, 0, shown.stderr);
  const lines = await eventually(async () => (await readFile(opened, "utf8").catch(() => "")).trim() || undefined);
  t.same(lines.split("\n"), [shown.stdout.split("\n")[0]], "only the run allowed to open one opened the link");
});

t.test("passkeys: list own and an operator's, remove reports the API's errors", async (t) => {
  t.same(await json("passkeys", "list"), { passkeys: [] });
  const none = await run("passkeys", "list");
  t.equal(none.code, 0);
  t.equal(none.stdout, "", "nothing on stdout for an empty list");
  t.match(none.stderr, /no passkeys; register one in the web console/);

  t.same(await json("passkeys", "list", "--operator", "bob"), { passkeys: [] }, "by name");
  t.same(await json("passkeys", "list", "--operator", other.body.id), { passkeys: [] }, "by id");
  const nobody = await run("passkeys", "list", "--operator", "nobody");
  t.equal(nobody.code, 1);
  t.match(nobody.stderr, /operator_not_found/);

  const missing = await run("passkeys", "rm", "01NOSUCHPASSKEY");
  t.equal(missing.code, 1);
  t.match(missing.stderr, /passkey_not_found/);
  const missingOther = await run("passkeys", "rm", "01NOSUCHPASSKEY", "--operator", "bob");
  t.equal(missingOther.code, 1);
  t.match(missingOther.stderr, /passkey_not_found/);

  const help = await run("passkeys", "--help");
  t.match(help.stdout, /needs a browser/, "--help says why there is no `passkeys add`");
});

t.test("agents summary and list --selector", async (t) => {
  const nodeId = (i: number) => i.toString(16).padStart(32, "0");
  const seeds = Array.from({ length: 6 }, (_, i) => ({
    node_id: nodeId(i + 1),
    status: i === 0 ? "pending" : "approved",
    name: i === 0 ? null : `host-${i}`,
    connected: i % 2 === 1,
    tags: { role: i < 4 ? "web" : "db" },
  }));
  await agentsDeps.pool.query(
    `INSERT INTO agents (node_id, public_key, name, status, connected, replica, session, tags, first_seen, last_seen)
     SELECT s.node_id, md5(s.node_id) || md5(s.node_id), s.name, s.status, s.connected,
            CASE WHEN s.connected THEN $2 END, CASE WHEN s.connected THEN 's' END, s.tags, 1, 1
       FROM jsonb_to_recordset($1::jsonb) AS s(node_id text, name text, status text, connected boolean, tags jsonb)`,
    [JSON.stringify(seeds), agentsSvc.replica],
  );

  t.same(await json("agents", "summary"), {
    total: 6,
    connected: 3,
    disconnected: 2,
    pending: 1,
    approved: 5,
    rejected: 0,
  });
  t.same(await json("agents", "summary", "--selector", "role=web"), {
    total: 4,
    connected: 2,
    disconnected: 1,
    pending: 1,
    approved: 3,
    rejected: 0,
  });
  const human = await run("agents", "summary", "--selector", "role=db");
  t.equal(human.code, 0, human.stderr);
  t.match(human.stdout, /^total:\s+2\nconnected:\s+1\ndisconnected:\s+1\npending:\s+0\n/);

  const web = await json("agents", "list", "--selector", "role=web", "--all", "--limit", "1");
  t.same(
    web.agents.map((a: { node_id: string }) => a.node_id),
    seeds.filter((s) => s.tags.role === "web").map((s) => s.node_id),
    "--all follows the filtered pages",
  );

  const bad = await run("agents", "summary", "--selector", "role in (web");
  t.equal(bad.code, 1);
  t.match(bad.stderr, /^error: selector: .* \(invalid_selector\)/);
});
