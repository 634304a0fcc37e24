import t from "tap";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { eventually } from "@orch/kit/testing";
import { startStateStack } from "./lib/state-stack.js";

// An archive from a blob, end to end: a tar.gz made by the system tar, uploaded through the API,
// named by an `archive` resource, shipped over the agent link into a real orch-agent's cache,
// extracted, and left alone by the next apply; then a zip under a new digest with clean: true.
// Real services, Postgres, NATS and agent process.
const { linkPort, system, agents, dir } = await startStateStack(t, { name: "archive" });
const token = await system.login(system.admin);
const api = (method: string, path: string, body?: unknown) =>
  system.api(method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
const must = async (p: ReturnType<typeof api>, status: number) => {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
};

const digestOf = (b: Buffer) => `sha256:${createHash("sha256").update(b).digest("hex")}`;
async function upload(file: string): Promise<string> {
  const bytes = readFileSync(file);
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
await must(api("POST", `/agents/${nodeId}`, { status: "approved", name: "arc-1" }), 200);
await eventually(
  async () => ((await api("GET", `/agents/${nodeId}`)).body?.attributes?.state_features ?? "").includes("archive"),
  20_000,
);

/** A release tree: bin/app (0755), etc/app.conf, a link; `version` in its config. */
function release(version: string): string {
  const src = join(dir, `release-${version}`);
  mkdirSync(join(src, "bin"), { recursive: true });
  mkdirSync(join(src, "etc"));
  writeFileSync(join(src, "bin/app"), `#!/bin/sh\necho ${version}\n`, { mode: 0o755 });
  writeFileSync(join(src, "etc/app.conf"), `version=${version}\n`);
  symlinkSync("etc/app.conf", join(src, "app.conf"));
  return src;
}

const tgz = join(dir, "v1.tar.gz");
execFileSync("tar", ["czf", tgz, "-C", release("1"), "."]);
const zip = join(dir, "v2.zip");
const src2 = release("2");
execFileSync("zip", ["-qry", zip, "."], { cwd: src2 });
const d1 = await upload(tgz);
const d2 = await upload(zip);
const dest = join(dir, "opt/app");
const moduleOf = (digest: string, clean = false) =>
  [
    "name: app",
    "resources:",
    "  - id: release",
    "    type: archive",
    `    source: ${digest}`,
    `    path: ${dest}`,
    ...(clean ? ["    clean: true"] : []),
    "",
  ].join("\n");
const run = (kind: "apply" | "plan") => must(api("POST", `/agents/arc-1/${kind}?wait=60`, { modules: ["app"] }), 200);
const sentLines = () =>
  system
    .output()
    .split("\n")
    .filter((l) => l.includes("blobs sent to the agent's cache"));

t.test("plan, then apply: the agent gets the archive and extracts it", async (t) => {
  await must(api("POST", "/modules", { name: "app", content: moduleOf(d1) }), 201);
  const plan = await run("plan");
  t.equal(plan.status, "succeeded", JSON.stringify(plan.results));
  t.equal(plan.results[0].status, "changed");
  t.match(plan.results[0].diff, `archive (none) -> ${d1}`);
  t.notOk(existsSync(dest), "a plan writes nothing");
  t.same(sentLines(), [], "a plan sends no blob");

  const apply = await run("apply");
  t.equal(apply.status, "succeeded", JSON.stringify(apply.results));
  t.equal(apply.results[0].status, "changed");
  t.equal(readFileSync(join(dest, "etc/app.conf"), "utf8"), "version=1\n");
  t.equal(readFileSync(join(dest, "app.conf"), "utf8"), "version=1\n", "through the link");
  t.equal(statSync(join(dest, "bin/app")).mode & 0o777, 0o755);
  t.equal(sentLines().length, 1, "the archive sent once");
});

t.test("a second apply changes nothing and sends nothing", async (t) => {
  const again = await run("apply");
  t.equal(again.status, "succeeded");
  t.equal(again.results[0].status, "ok", JSON.stringify(again.results));
  t.equal(sentLines().length, 1, "no second send");
});

t.test("a new digest (a zip) with clean: true replaces the tree exactly", async (t) => {
  writeFileSync(join(dest, "stray.log"), "not the archive's");
  await must(api("POST", "/modules", { name: "app", content: moduleOf(d2, true) }), 201);
  const plan = await run("plan");
  t.match(plan.results[0].diff, `archive ${d1} (5 entries) -> ${d2}`);
  const apply = await run("apply");
  t.equal(apply.status, "succeeded", JSON.stringify(apply.results));
  t.equal(readFileSync(join(dest, "etc/app.conf"), "utf8"), "version=2\n");
  t.notOk(existsSync(join(dest, "stray.log")), "clean removed what is not the archive's");
  t.equal((await run("apply")).results[0].status, "ok");
});
