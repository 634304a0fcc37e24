import t from "tap";
import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { ed25519 } from "@orch/kit/testing";
import { call, login } from "../../services/gateway/test/harness.js";
import { startStack } from "../../services/state/test/harness.js";
import { cli } from "./helpers/cli.js";

// Who made a module, started a run or created a secret, as orchctl's human output shows it against
// the real gateway, auth, secrets and state services: the operator's name, never its id; --json
// keeps the id the API sent.
const s = await startStack(t);
const root = t.testdir();
const env = { HOME: root, ORCHCTL_HOME: join(root, "orchctl") };
if ((await cli(["keygen"], env)).code !== 0) throw new Error("keygen failed");
const pub = (await readFile(join(env.ORCHCTL_HOME, "id_ed25519.pub"), "utf8")).trim();
const created = await s.api("POST", "/operators", { name: "boss", public_key: pub, role: "admin" });
if (created.status !== 201) throw new Error(`admin not created: ${created.text}`);
const bossId: string = created.body.id;
const signedIn = await cli(["login", "--server", s.gw.url], env);
if (signedIn.code !== 0) throw new Error(signedIn.stderr);
const run = async (...args: string[]) => {
  const r = await cli(args, env);
  if (r.code !== 0) throw new Error(`orchctl ${args.join(" ")}: ${r.stderr}`);
  return r.stdout;
};
const json = async (...args: string[]) => JSON.parse(await run(...args, "--json"));

const moduleFile = join(root, "marker.yaml");
await writeFile(
  moduleFile,
  `name: marker\nresources:\n  - { id: mark, type: file, path: '${root}/mark', content: 'hi' }\n`,
);
await run("modules", "push", moduleFile);

t.test("modules list: BY is the uploader's name the gateway sends; --json keeps the id too", async (t) => {
  const table = await run("modules", "list");
  t.match(table, /^NAME\s+RESOURCES\s+UPLOADED\s+BY\s+DESCRIPTION$/m);
  t.match(table, /^marker\s+1\s+\S+\s+boss\b/m);
  t.notMatch(table, bossId);
  const [m] = (await json("modules", "list")).modules;
  t.match(m, { name: "marker", uploaded_by: bossId, uploaded_by_name: "boss" });
  t.match(await run("modules", "show", "marker"), /^uploaded_by:\s+boss$/m);
});

t.test("assignments runs: BY is the starting operator's name", async (t) => {
  await run("assignments", "create", "web", "--selector", "role=web", "-m", "marker");
  await run("assignments", "apply", "web", "--no-wait");
  const table = await run("assignments", "runs", "web");
  t.match(table, /\bBY$/m);
  t.match(table, /\bboss$/m);
  t.notMatch(table, bossId);
  const page = await json("assignments", "runs", "web");
  t.equal(page.runs[0].started_by, bossId, "--json has the id the API sent");
  t.match(await run("assignments", "show", "web"), /^created_by:\s+boss$/m);
});

t.test("secrets show: created_by and updated_by name the operator; --json has the ids", async (t) => {
  const token = JSON.parse(await readFile(join(env.ORCHCTL_HOME, "session.json"), "utf8")).token as string;
  const put = await call(s.gw.url, "POST", "/api/v1/secrets", { token, body: { name: "db-password", value: "x" } });
  t.equal(put.status, 201, put.text);
  const text = await run("secrets", "show", "db-password");
  t.match(text, /^created_by:\s+boss$/m);
  t.match(text, /^updated_by:\s+boss$/m);
  t.notMatch(text, bossId);
  t.match(await json("secrets", "show", "db-password"), { created_by: bossId, updated_by: bossId });
});

t.test("a deleted operator is not in the listing: its id shows unchanged", async (t) => {
  const key = ed25519();
  const temp = await s.api("POST", "/operators", { name: "temp", public_key: key.publicKeyHex, role: "admin" });
  t.equal(temp.status, 201, temp.text);
  const token = await login(s.gw.url, key);
  const made = await call(s.gw.url, "POST", "/api/v1/secrets", { token, body: { name: "by-temp", value: "y" } });
  t.equal(made.status, 201, made.text);
  t.match(await run("secrets", "show", "by-temp"), /^created_by:\s+temp$/m);
  t.equal((await s.api("DELETE", `/operators/${temp.body.id}`)).status, 204);
  t.match(await run("secrets", "show", "by-temp"), new RegExp(`^created_by:\\s+${temp.body.id}$`, "m"));
});
