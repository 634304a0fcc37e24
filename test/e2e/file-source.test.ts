import t from "tap";
import { createHash, randomBytes } from "node:crypto";
import { readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { eventually } from "@orch/kit/testing";
import { startStateStack } from "./lib/state-stack.js";

// A file from a blob, end to end: uploaded through the API, named by a module's `source:`, shipped
// over the agent link into a real orch-agent's cache before the apply, written exactly, and not
// sent again when the agent has it. Real services, Postgres, NATS and agent process.
const { linkPort, system, agents, dir } = await startStateStack(t, { name: "file-source" });
const token = await system.login(system.admin);
const api = (method: string, path: string, body?: unknown) =>
  system.api(method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
const must = async (p: ReturnType<typeof api>, status: number) => {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
};

const digestOf = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
async function upload(bytes: Buffer): Promise<string> {
  const digest = digestOf(bytes);
  const r = await fetch(new URL(`/api/v1/blobs/${digest}`, system.url), {
    method: "PUT",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/octet-stream" },
    body: bytes,
  });
  if (r.status !== 201) throw new Error(`upload: ${r.status} ${await r.text()}`);
  return digest;
}

const proc = agents.spawn(["--server", `127.0.0.1:${linkPort}`, "--no-terminal"]);
const nodeId = await proc.nodeId();
await eventually(async () => (await api("GET", `/agents/${nodeId}`)).body?.connected === true, 20_000);
await must(api("POST", `/agents/${nodeId}`, { status: "approved", name: "bin-1" }), 200);

const v1 = randomBytes(6 * 1024 * 1024 + 333);
const v2 = randomBytes(3 * 1024 * 1024);
const d1 = await upload(v1);
const d2 = await upload(v2);
const target = join(dir, "app.bin");
const moduleOf = (digest: string) =>
  [
    "name: app",
    "resources:",
    "  - id: bin",
    "    type: file",
    `    path: ${target}`,
    `    source: ${digest}`,
    '    mode: "0750"',
    "",
  ].join("\n");
const run = (kind: "apply" | "plan") => must(api("POST", `/agents/bin-1/${kind}?wait=60`, { modules: ["app"] }), 200);
const sentLines = () =>
  system
    .output()
    .split("\n")
    .filter((l) => l.includes("blobs sent to the agent's cache"));

t.test("a module naming a blob that is not stored is refused at its line", async (t) => {
  const missing = digestOf(Buffer.from("never uploaded"));
  const r = await api("POST", "/modules", { name: "app", content: moduleOf(missing) });
  t.equal(r.status, 400);
  t.equal(r.body.code, "unknown_blob");
  t.equal(r.body.line, 6);
  t.match(r.body.detail, /resources\[0\]\.source \(line 6\): blob sha256:[0-9a-f]{64} is not stored/);
  t.equal((await api("GET", "/modules/app")).status, 404, "nothing stored");
  const both = await api("POST", "/modules", {
    name: "app",
    content: moduleOf(d1).replace("    mode:", '    content: "x"\n    mode:'),
  });
  t.equal(both.status, 400);
  t.match(both.body.detail, /content or source, not both/);
});

t.test("plan, then apply: the agent gets the blob and writes the file exactly", async (t) => {
  await must(api("POST", "/modules", { name: "app", content: moduleOf(d1) }), 201);
  const plan = await run("plan");
  t.equal(plan.status, "succeeded", JSON.stringify(plan.results));
  t.equal(plan.summary.changed, 1);
  t.match(plan.results[0].diff, new RegExp(d1.slice(7)), "the plan names the new content by its hash");
  t.same(sentLines(), [], "a plan sends no blob");

  const apply = await run("apply");
  t.equal(apply.status, "succeeded", JSON.stringify(apply.results));
  t.equal(apply.results[0].status, "changed");
  t.equal(digestOf(readFileSync(target)), d1, "the file is the blob");
  t.equal(statSync(target).mode & 0o7777, 0o750);
  const sent = sentLines();
  t.equal(sent.length, 1);
  t.match(sent[0], new RegExp(`"bytes":${v1.length}\\b`), "the whole blob, once");
});

t.test("a second apply changes nothing and sends nothing", async (t) => {
  const again = await run("apply");
  t.equal(again.status, "succeeded");
  t.equal(again.results[0].status, "ok");
  t.equal(sentLines().length, 1, "no second send");
});

t.test("a new digest: the plan shows it, the apply sends only the new blob", async (t) => {
  await must(api("POST", "/modules", { name: "app", content: moduleOf(d2) }), 201);
  const plan = await run("plan");
  t.equal(plan.summary.changed, 1);
  t.match(plan.results[0].diff, new RegExp(`${d1.slice(7)}.*->.*${d2.slice(7)}`, "s"));
  const apply = await run("apply");
  t.equal(apply.status, "succeeded", JSON.stringify(apply.results));
  t.equal(digestOf(readFileSync(target)), d2);
  const sent = sentLines();
  t.equal(sent.length, 2);
  t.match(sent[1], new RegExp(`"bytes":${v2.length}\\b`));
  // Back to the first blob: still in the agent's cache, so nothing is sent.
  await must(api("POST", "/modules", { name: "app", content: moduleOf(d1) }), 201);
  const back = await run("apply");
  t.equal(back.results[0].status, "changed");
  t.equal(digestOf(readFileSync(target)), d1);
  t.equal(sentLines().length, 2, "the cached blob is not sent again");
});
