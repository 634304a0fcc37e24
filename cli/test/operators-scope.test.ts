import t from "tap";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { createTestDatabase, ed25519, startNats } from "@orch/kit/testing";
import { call, login, startAuth, startGateway } from "../../services/gateway/test/harness.js";
import { cli } from "./helpers/cli.js";

// orchctl operators add --agent-selector / operators scope against the real gateway and auth
// service (in-process), as an admin.
const nats = await startNats();
const db = await createTestDatabase();
const admin = ed25519();
const auth = await startAuth(nats, db, admin);
const gw = await startGateway(nats);
t.teardown(async () => {
  await gw.stop();
  await auth.stop();
  await db.drop();
  await nats.stop();
});

const root = t.testdir();
const env = { HOME: root, ORCHCTL_HOME: join(root, "orchctl") };
if ((await cli(["keygen"], env)).code !== 0) throw new Error("keygen failed");
const pub = (await readFile(join(env.ORCHCTL_HOME, "id_ed25519.pub"), "utf8")).trim();
const adminToken = await login(gw.url, admin);
const boss = { name: "boss", public_key: pub, role: "admin" };
const created = await call(gw.url, "POST", "/api/v1/operators", { token: adminToken, body: boss });
if (created.status !== 201) throw new Error(`admin not created: ${created.text}`);
const loggedIn = await cli(["login", "--server", gw.url], env);
if (loggedIn.code !== 0) throw new Error(loggedIn.stderr);
const run = (...args: string[]) => cli(args, env);
const json = async (...args: string[]) => {
  const r = await run(...args, "--json");
  if (r.code !== 0) throw new Error(`orchctl ${args.join(" ")}: ${r.stderr}`);
  return JSON.parse(r.stdout);
};

t.test("add with --agent-selector, change it, clear it", async (t) => {
  const key = ed25519().publicKeyHex;
  const added = await json("operators", "add", "wendy", "--public-key", key, "--agent-selector", "role=web");
  t.equal(added.agent_selector, "role=web");
  t.equal((await json("operators", "get", "wendy")).agent_selector, "role=web");
  const text = await run("operators", "list");
  t.match(text.stdout, /SCOPE/);
  t.match(text.stdout, /wendy.*role=web/);
  t.equal((await json("operators", "scope", "wendy", "role in (web,db)")).agent_selector, "role in (web,db)");
  const human = await run("operators", "scope", "wendy", "env=prod");
  t.match(human.stdout, /now reaches agents matching 'env=prod'/);
  t.equal((await json("operators", "scope", "wendy", "--clear")).agent_selector, null);
  t.equal((await json("operators", "get", "wendy")).agent_selector, null, "cleared on the server");
});

t.test("refusals: a bad selector, neither or both of selector and --clear, an admin", async (t) => {
  const bad = await run("operators", "scope", "wendy", "role=(web");
  t.not(bad.code, 0);
  t.match(bad.stderr, /invalid_selector|agent_selector/);
  const neither = await run("operators", "scope", "wendy");
  t.not(neither.code, 0, "neither");
  t.match(neither.stderr, /either a selector or --clear/, "refused by orchctl itself");
  t.not((await run("operators", "scope", "wendy", "role=web", "--clear")).code, 0, "both");
  const onAdmin = await run("operators", "scope", "boss", "role=web");
  t.not(onAdmin.code, 0);
  t.match(onAdmin.stderr, /admin/);
  t.equal((await json("operators", "get", "wendy")).agent_selector, null, "nothing changed");
});
