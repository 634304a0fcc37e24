// Secrets in state with real processes (auth, agents, secrets, state, gateway) and a
// real orch-agent: an operator cannot widen a secret; a secret cannot go into a command; what a
// command prints of it, in clear or encoded, is redacted; no plain hash of a file rendered with it
// is shown; a rendered path with `..` is refused by the agent. Needs `npm run build`.
import t from "tap";
import { createHash } from "node:crypto";
import { existsSync, readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { ed25519, eventually } from "@orch/kit/testing";
import { startStateStack } from "./lib/state-stack.js";

const { linkPort, system, agents, dir: root } = await startStateStack(t, { name: "secrets", keyByte: 9 });
const token = await system.login(system.admin);
type Res = Awaited<ReturnType<typeof system.api>>;
const as = (tok: string) => (method: string, path: string, body?: unknown) =>
  system.api(method, `/api/v1${path}`, { token: tok, ...(body !== undefined ? { body } : {}) });
const api = as(token);
const must = async (p: Promise<Res>, status: number) => {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
};

const agent = agents.spawn(["--server", `127.0.0.1:${linkPort}`]);
const web = await agent.nodeId();
await eventually(async () => (await api("GET", `/agents/${web}`)).body?.connected === true, 20_000);
await must(api("POST", `/agents/${web}`, { status: "approved", name: "web-1" }), 200);
await must(api("PUT", `/agents/${web}/tags`, { tags: { slot: "../escaped" } }), 200);

const SECRET = "e2e-S3cret/value with&symbols";
await must(api("POST", "/secrets", { name: "token", value: SECRET, restriction: { node_ids: [web] } }), 201);
const run = (kind: "apply" | "plan", modules: string[]) =>
  must(api("POST", `/agents/web-1/${kind}?wait=60`, { modules }), 200);
const upload = (name: string, ...resources: string[]) =>
  api("POST", "/modules", { name, content: [`name: ${name}`, "resources:", ...resources, ""].join("\n") });

t.test("an operator cannot widen the secret's restriction (403), can keep it narrow; an admin can", async (t) => {
  const key = ed25519();
  await must(api("POST", "/operators", { name: "olga", public_key: key.publicKeyHex, role: "operator" }), 201);
  const op = as(await system.login(key));
  const r = await op("PUT", "/secrets/token", { restriction: null });
  t.equal(r.status, 403);
  t.equal(r.body.code, "restriction_widening_requires_admin");
  const wider = await op("PUT", "/secrets/token", { restriction: { node_ids: [web, "c".repeat(32)] } });
  t.equal(wider.status, 403);
  t.same((await must(api("GET", "/secrets/token"), 200)).restriction, { node_ids: [web], tags: {} }, "unchanged");
  t.equal((await op("PUT", "/secrets/token", { restriction: { node_ids: [web] } })).status, 200, "same set: allowed");
});

t.test("a secret in an exec command is refused at upload, naming the field", async (t) => {
  const r = await upload("leak", `  - { id: x, type: exec, command: "printf %s '{{ secrets.token }}' | base64" }`);
  t.equal(r.status, 400);
  t.equal(r.body.code, "secret_in_argument");
  t.equal(r.body.path, "resources[0].command");
  t.match(r.body.detail, /env/);
});

t.test("the agent's output is redacted in clear, base64, hex, reversed and URL-encoded form", async (t) => {
  const script = [
    'printf "plain:%s\\n" "$TOKEN"',
    'printf "b64:%s\\n" "$(printf %s "$TOKEN" | base64 -w0)"',
    'printf "hex:%s\\n" "$(printf %s "$TOKEN" | od -An -tx1 -v | tr -d " \\n")"',
    'printf "rev:%s\\n" "$(printf %s "$TOKEN" | rev)"',
    `printf "url:%s\\n" "$(${JSON.stringify(process.execPath)} -e 'process.stdout.write(encodeURIComponent(process.env.TOKEN))')"`,
  ].join("\n");
  const env = `    env: { TOKEN: "{{ secrets.token }}" }`;
  await must(upload("reader", `  - id: show\n    type: exec\n    script: ${JSON.stringify(script)}\n${env}`), 201);
  const op = await run("apply", ["reader"]);
  t.equal(op.status, "succeeded");
  const out = await must(api("GET", `/agents/${web}/state/operations/${op.id}/output`), 200);
  t.equal(out.outputs[0].stdout, "plain:***\nb64:***\nhex:***\nrev:***\nurl:***\n");
});

t.test("believed state shows no plain hash of a file rendered with the secret", async (t) => {
  const file = join(root, "app.conf");
  await must(
    upload("conf", `  - { id: conf, type: file, path: ${file}, content: "token={{ secrets.token }}", mode: "0600" }`),
    201,
  );
  const op = await run("apply", ["conf"]);
  t.equal(op.status, "succeeded");
  t.equal(readFileSync(file, "utf8"), `token=${SECRET}`, "the agent wrote the value");
  const believed = await api("GET", "/agents/web-1/state");
  const conf = believed.body.resources.find((r: { id: string }) => r.id === "conf");
  t.same(Object.keys(conf.observed).sort(), ["exists", "group", "mode", "owner", "sealed", "size"], "no sha256");
  t.notOk(believed.text.includes(createHash("sha256").update(`token=${SECRET}`).digest("hex")));
});

t.test("a rendered path with '..' is refused by the agent and nothing is written", async (t) => {
  const resource = `  - { id: f, type: file, path: "${root}/sub/{{ tags.slot }}.conf", content: x }`;
  await must(upload("dots", resource), 201);
  const op = await run("apply", ["dots"]);
  t.equal(op.status, "failed");
  t.equal(op.results[0].status, "failed");
  t.match(op.results[0].message, /must not contain '\.\.' segments/);
  t.notOk(existsSync(join(root, "escaped.conf")));
  t.same(readdirSync(root).sort(), ["app.conf"]);
});
