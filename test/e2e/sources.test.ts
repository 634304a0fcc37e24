import t from "tap";
import { createHmac } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { createTestRepo, eventually, startGitHttpServer } from "@orch/kit/testing";
import { cli } from "../../cli/test/helpers/cli.js";
import { startStateStack } from "./lib/state-stack.js";

// State from git end to end (docs/sources.md): the services from dist/, real orch-agents, a real git
// repository served over git's smart HTTP protocol on loopback, push notifications in the three
// forges' real shapes signed with the source's webhook secret and posted to the gateway's public
// route, and orchctl for the plan of a branch. Needs `npm run build`.
const stack = await startStateStack(t, { name: "sources", keyByte: 21, extraServices: ["audit"] });
const { system, agents, dir, linkPort } = stack;
const gitRoot = join(dir, "git");
mkdirSync(gitRoot);
const repo = await createTestRepo(join(gitRoot, "fleet"));
const gitServer = await startGitHttpServer(gitRoot);
t.teardown(() => gitServer.close());

const token = await system.login(system.admin);
const api = (method: string, path: string, body?: unknown) =>
  system.api(method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
const must = async (p: ReturnType<typeof api>, status: number) => {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
};
const audit = async (type: string) =>
  (await must(api("GET", `/audit?event_type=${type}&limit=100`), 200)).events as any[];

const env = { HOME: dir, ORCHCTL_HOME: join(dir, "home"), ORCH_URL: system.url };
const orchctl = (...args: string[]) => cli(args, env);
const pem = join(dir, "admin.pem");
writeFileSync(pem, system.admin.privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
const login = await orchctl("login", "--key", pem);
if (login.code !== 0) throw new Error(login.stderr);

// Two web agents (each writes its own file, named by its slot tag) and a db agent the assignment
// does not select.
const nodes: Record<string, string> = {};
for (const [name, tags] of [
  ["web-a", { role: "web", slot: "a" }],
  ["web-b", { role: "web", slot: "b" }],
  ["db-1", { role: "db", slot: "db" }],
] as const) {
  const proc = agents.spawn(["--server", `127.0.0.1:${linkPort}`, "--no-terminal"]);
  const nodeId = await proc.nodeId();
  await eventually(async () => (await api("GET", `/agents/${nodeId}`)).body?.connected === true, 20_000);
  await must(api("POST", `/agents/${nodeId}`, { status: "approved", name }), 200);
  await must(api("PUT", `/agents/${nodeId}/tags`, { tags }), 200);
  nodes[name] = nodeId;
}
const outFile = (slot: string) => join(dir, `motd-${slot}`);
const read = (slot: string) => (existsSync(outFile(slot)) ? readFileSync(outFile(slot), "utf8") : undefined);

const motd = (version: string) =>
  [
    "name: motd",
    "description: message of the day",
    "resources:",
    "  - id: motd",
    "    type: file",
    `    path: '${dir}/motd-{{ tags.slot }}'`,
    `    content: "${version} on {{ tags.slot }}\\n"`,
    "",
  ].join("\n");
const webAssignment = [
  "selector: role=web",
  "modules: [motd]",
  "description: the web fleet's message of the day",
  "apply_on_sync: true",
  "batch: 1",
  "",
].join("\n");

// Push notifications: the forges' payloads (fixtures) with ref/after of this push, signed as each forge signs.
const FIXTURES = fileURLToPath(new URL("../../services/state/test/fixtures/webhooks/", import.meta.url));
let webhookSecret = "";
function pushNotice(forge: "github" | "gitlab" | "gitea", after: string, secret = webhookSecret) {
  const payload = JSON.parse(readFileSync(join(FIXTURES, `${forge}-push.json`), "utf8"));
  payload.ref = "refs/heads/main";
  payload.after = after;
  if (forge === "gitlab") payload.checkout_sha = after;
  const body = JSON.stringify(payload);
  const hmac = createHmac("sha256", secret).update(body).digest("hex");
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (forge === "github") Object.assign(headers, { "x-github-event": "push", "x-hub-signature-256": `sha256=${hmac}` });
  if (forge === "gitlab") Object.assign(headers, { "x-gitlab-event": "Push Hook", "x-gitlab-token": secret });
  // Gitea also sends GitHub's event header; its own signature header must win.
  if (forge === "gitea")
    Object.assign(headers, { "x-gitea-event": "push", "x-github-event": "push", "x-gitea-signature": hmac });
  // The webhook route is public: the signature is the authentication, so no bearer token.
  return system.api("POST", "/api/v1/sources/fleet/webhook", { body, headers });
}

const source = async () => must(api("GET", "/sources/fleet"), 200);
const module = async (name: string) => must(api("GET", `/modules/${name}`), 200);
const applies = async (node: string) =>
  (await must(api("GET", `/agents/${node}/state/operations?kind=apply&limit=100`), 200)).operations as any[];

const initial = await (async () => {
  await repo.write("README.md", "fleet configuration\n");
  return repo.commit("initial");
})();

t.test(
  "a source is created; its first sync runs at once; no secret is returned but the webhook secret once",
  async (t) => {
    const created = await must(
      api("POST", "/sources", { name: "fleet", url: gitServer.url("fleet"), branch: "main", interval_s: 3600 }),
      201,
    );
    t.equal(created.name, "fleet");
    t.type(created.webhook_secret, "string");
    t.ok(created.webhook_secret.length >= 16, "a generated webhook secret");
    webhookSecret = created.webhook_secret;
    const synced = await eventually(async () => {
      const s = await source();
      return s.status === "ok" ? s : undefined;
    }, 15_000);
    t.equal(synced.commit, initial);
    t.notOk("webhook_secret" in synced, "the secret is shown once, at creation");
    t.notMatch(JSON.stringify(await must(api("GET", "/sources"), 200)), webhookSecret);
  },
);

let c1 = "";
t.test("commit a module and an apply_on_sync assignment → webhook → synced and applied", async (t) => {
  await repo.write("modules/motd.yaml", motd("v1"));
  await repo.write("assignments/web.yaml", webAssignment);
  c1 = await repo.commit("motd for the web fleet");

  // The source's schedule is an hour (interval_s 3600): the push notice is what syncs it.
  const started = Date.now();
  const hook = await pushNotice("github", c1);
  t.equal(hook.status, 202, hook.text);
  t.equal(hook.body.forge, "github");
  t.equal(hook.body.synced, true);
  t.equal(hook.body.commit, c1);
  const m = await eventually(async () => {
    const r = await api("GET", "/modules/motd");
    return r.status === 200 && r.body.commit === c1 ? r.body : undefined;
  }, 5_000);
  t.comment(`synced ${Date.now() - started} ms after the push`);
  t.equal(m.source, "fleet");
  t.equal(m.removed_from_source, false);
  const a = await must(api("GET", "/assignments/web"), 200);
  t.equal(a.source, "fleet");
  t.equal(a.commit, c1);
  t.equal(a.apply_on_sync, true);
  t.equal(a.selector, "role=web");

  await eventually(() => read("a") === "v1 on a\n" && read("b") === "v1 on b\n", 30_000);
  t.equal(read("db"), undefined, "the db agent is not selected");
  const runs = (await must(api("GET", "/assignments/web/runs?limit=10"), 200)).runs as any[];
  t.equal(runs.length, 1, "one apply run for the sync");
  t.equal(runs[0].kind, "apply");
  t.equal(runs[0].source, "fleet");
  t.equal(runs[0].commit, c1, "the run records the commit it applied");
  t.equal(runs[0].started_by, "source:fleet");
  t.equal(runs[0].batch_size, 1, "rolling, with the file's batch setting");
  const [op] = await applies(nodes["web-a"]!);
  t.equal(op.actor.id, "source:fleet");
  t.equal(op.assignment, "web");
  t.equal(op.run_id, runs[0].run_id);

  const synced = await eventually(async () => (await audit("source.synced")).find((e) => e.metadata.commit === c1));
  t.equal(synced.metadata.previous_commit, initial);
  t.equal(synced.metadata.created, 2, "a module and an assignment created");
});

let c2 = "";
t.test("a follow-up commit changing the module is synced (GitLab notice) and applied", async (t) => {
  await repo.write("modules/motd.yaml", motd("v2"));
  c2 = await repo.commit("motd v2");
  const hook = await pushNotice("gitlab", c2);
  t.equal(hook.status, 202, hook.text);
  t.equal(hook.body.forge, "gitlab");
  t.equal(hook.body.synced, true);
  await eventually(() => read("a") === "v2 on a\n" && read("b") === "v2 on b\n", 30_000);
  t.equal((await module("motd")).commit, c2);
  t.equal((await source()).commit, c2);
  const runs = (await must(api("GET", "/assignments/web/runs?limit=10"), 200)).runs as any[];
  t.equal(runs.length, 2);
  t.equal(runs[0].commit, c2);
});

let reverted = "";
t.test("git revert (Gitea notice) → the previous content comes back on the agents", async (t) => {
  await repo.git("revert", "--no-edit", "HEAD");
  reverted = await repo.git("rev-parse", "HEAD");
  const hook = await pushNotice("gitea", reverted);
  t.equal(hook.status, 202, hook.text);
  t.equal(hook.body.forge, "gitea", "Gitea's signature header wins over the GitHub event header it also sends");
  await eventually(() => read("a") === "v1 on a\n" && read("b") === "v1 on b\n", 30_000);
  const m = await module("motd");
  t.equal(m.commit, reverted);
  t.match(m.content, /"v1 on \{\{ tags.slot \}\}\\n"/);
});

t.test("a notice with a wrong signature → 401 and no sync", async (t) => {
  await repo.write("modules/motd.yaml", motd("forged"));
  const forged = await repo.commit("not announced properly");
  const before = await source();
  for (const forge of ["github", "gitlab", "gitea"] as const) {
    const hook = await pushNotice(forge, forged, "not-the-webhook-secret-at-all");
    t.equal(hook.status, 401, `${forge}: ${hook.text}`);
    t.equal(hook.body.code, "webhook_signature_invalid");
  }
  const after = await source();
  t.equal(after.commit, reverted);
  t.equal(after.attempted_at, before.attempted_at, "no sync was attempted");
  // Back to the reverted content so the tree in the repository matches what is in force.
  await repo.write("modules/motd.yaml", motd("v1"));
  await repo.commit("v1 again");
});

t.test("an API change to a managed object → 409 managed_by_source", async (t) => {
  const refusals = [
    await api("POST", "/modules", { name: "motd", content: motd("by hand") }),
    await api("DELETE", "/modules/motd"),
    await api("PUT", "/assignments/web", { selector: "role=db", modules: ["motd"] }),
    await api("DELETE", "/assignments/web"),
  ];
  for (const r of refusals) {
    t.equal(r.status, 409, r.text);
    t.equal(r.body.code, "managed_by_source");
    t.match(r.body.detail ?? r.body.title, /fleet/, "names the source");
  }
  t.equal(
    (await api("POST", "/assignments", { name: "web", selector: "*", modules: ["motd"] })).body.code,
    "assignment_exists",
  );
  t.equal((await module("motd")).commit, reverted, "nothing changed");
  t.equal((await must(api("GET", "/assignments/web"), 200)).selector, "role=web");
});

t.test("orchctl sources plan fleet --ref feature --json: per-agent diffs, nothing changes", async (t) => {
  await repo.branch("feature");
  await repo.write("modules/motd.yaml", motd("v3"));
  const feature = await repo.commit("motd v3 (under review)");
  await repo.checkout("main");
  const before = await source();
  const appliesBefore = (await applies(nodes["web-a"]!)).length;

  const r = await orchctl("--json", "sources", "plan", "fleet", "--ref", "feature");
  t.equal(r.code, 0, r.stderr);
  const plan = JSON.parse(r.stdout);
  t.equal(plan.commit, feature);
  t.equal(plan.current_commit, before.commit);
  t.same(plan.errors, []);
  t.same(plan.modules_changed, ["motd"]);
  t.equal(plan.complete, true);
  const web = plan.assignments.find((a: any) => a.name === "web");
  t.equal(web.change, "updated");
  t.equal(web.run.kind, "plan");
  t.equal(web.run.commit, feature);
  const ops = web.operations as any[];
  t.same(ops.map((o) => o.node_name).sort(), ["web-a", "web-b"], "one plan per selected agent");
  for (const o of ops) {
    const slot = o.node_name.slice(-1);
    t.equal(o.kind, "plan");
    t.equal(o.status, "succeeded");
    const [res] = o.results;
    t.equal(res.status, "changed");
    t.match(res.diff, new RegExp(`^-v1 on ${slot}$`, "m"), `${o.node_name}: the line in force`);
    t.match(res.diff, new RegExp(`^\\+v3 on ${slot}$`, "m"), `${o.node_name}: the branch's line`);
  }

  const human = await orchctl("sources", "plan", "fleet", "--ref", "feature");
  t.equal(human.code, 0, human.stderr);
  t.match(human.stdout, /web-a/);
  t.match(human.stdout, /\+v3 on a/);

  const after = await source();
  t.equal(after.commit, before.commit, "the source's commit in force is unchanged");
  t.equal((await module("motd")).commit, reverted, "the catalog is unchanged");
  t.equal(read("a"), "v1 on a\n", "the agents are unchanged");
  t.equal((await applies(nodes["web-a"]!)).length, appliesBefore, "no apply ran");
});

t.test("invalid YAML in one of 20 files → nothing changes; the error names the file and line", async (t) => {
  const good = await repo.git("rev-parse", "HEAD");
  const hook0 = await pushNotice("github", good);
  t.equal(hook0.status, 202, hook0.text);
  const inForce = await eventually(async () => {
    const s = await source();
    return s.commit === good ? s : undefined;
  }, 5_000);
  const modulesBefore = (await must(api("GET", "/modules?limit=500"), 200)).modules.map((m: any) => m.name);
  const motdBefore = await module("motd");

  // motd.yaml + web.yaml + 17 new modules + 1 broken one = 20 files; motd changes too.
  await repo.write("modules/motd.yaml", motd("v4"));
  for (let i = 1; i <= 17; i++) {
    const n = String(i).padStart(2, "0");
    await repo.write(
      `modules/extra-${n}.yaml`,
      `name: extra-${n}\nresources:\n  - { id: d, type: directory, path: '${dir}/extra-${n}' }\n`,
    );
  }
  await repo.write(
    "modules/broken.yaml",
    [
      "name: broken",
      "resources:",
      "  - id: a",
      "    type: file",
      "    type: directory",
      `    path: '${dir}/broken'`,
      "",
    ].join("\n"),
  );
  const bad = await repo.commit("twenty files, one of them broken");
  t.equal((await repo.git("ls-tree", "-r", "--name-only", "HEAD", "modules", "assignments")).split("\n").length, 20);

  const hook = await pushNotice("github", bad);
  t.equal(hook.status, 202, hook.text);
  const failed = await eventually(async () => {
    const s = await source();
    return s.attempted_commit === bad && s.status === "error" ? s : undefined;
  }, 10_000);
  t.equal(failed.commit, inForce.commit, "the previous commit stays in force");
  t.equal(failed.errors.length, 1, JSON.stringify(failed.errors));
  t.equal(failed.errors[0].file, "modules/broken.yaml");
  t.equal(failed.errors[0].line, 5, "the duplicate key's line");
  t.equal(failed.errors[0].code, "invalid_yaml", "the code the upload API gives");

  const modulesAfter = (await must(api("GET", "/modules?limit=500"), 200)).modules.map((m: any) => m.name);
  t.same(modulesAfter, modulesBefore, "no module of the tree was created");
  const m = await module("motd");
  t.equal(m.commit, motdBefore.commit);
  t.equal(m.content, motdBefore.content, "the module keeps the content in force");
  t.equal(read("a"), "v1 on a\n", "nothing was applied");

  const event = await eventually(async () =>
    (await audit("source.sync_failed")).find((e) => e.metadata.commit === bad),
  );
  t.equal(event.metadata.file, "modules/broken.yaml");
  t.equal(event.metadata.line, 5);
  t.match(event.summary, bad.slice(0, 7), "the summary names the commit");
});

t.test("removing the assignment file removes the assignment", async (t) => {
  await repo.remove("modules/broken.yaml");
  await repo.remove("assignments/web.yaml");
  const c = await repo.commit("fix the broken module, retire the web assignment");
  const hook = await pushNotice("github", c);
  t.equal(hook.status, 202, hook.text);
  await eventually(async () => (await source()).commit === c, 10_000);
  const gone = await api("GET", "/assignments/web");
  t.equal(gone.status, 404);
  t.equal(gone.body.code, "assignment_not_found");
  const m = await module("motd");
  t.equal(m.commit, c, "the module is still in the tree");
  t.match(m.content, /v4 on/);
  t.equal((await module("extra-17")).source, "fleet", "the rest of the tree is in force now");
  const deleted = await eventually(async () => (await audit("assignment.deleted")).find((e) => e.target.id === "web"));
  t.equal(deleted.actor.id, "source:fleet");
  t.equal(read("a"), "v1 on a\n", "no apply: the assignment that would apply it is gone");
  t.notMatch(system.output(), webhookSecret, "the webhook secret is in no service's output");
});
