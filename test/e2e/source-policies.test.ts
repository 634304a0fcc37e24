import t from "tap";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { createTestRepo, eventually, startGitHttpServer } from "@orch/kit/testing";
import { startStateStack } from "./lib/state-stack.js";

// Approval policies from git (docs/approvals.md#policies-from-git): a real repository served over
// git's smart HTTP on loopback, synced by the state service, whose approval-policies/ the auth
// service takes over, checked as the API checks a PUT, all or nothing with the rest of the tree.
// Services from dist/ (needs `npm run build`).
const stack = await startStateStack(t, { name: "source-policies", keyByte: 43, extraServices: ["audit"] });
const { system, dir } = stack;
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
const sync = async () => must(api("POST", "/sources/fleet/sync"), 200);

const prodApplies = (approvals: number, extra = "") =>
  [
    "description: production applies need a second person",
    "actions: [assignment.apply, agent.apply]",
    "selector: env=prod",
    `approvals_required: ${approvals}`,
    "approvers: ['role:admin']",
    "expires_after_seconds: 3600",
    extra,
    "",
  ].join("\n");

await must(
  api("PUT", "/approval-policies/api-owned", {
    actions: ["agent.apply"],
    approvers: ["role:admin"],
    approvals_required: 1,
  }),
  200,
);
await repo.write("approval-policies/prod-applies.yaml", prodApplies(1));
await repo.write("modules/motd.yaml", "name: motd\nresources: []\n");
let commit = await repo.commit("policies");
await must(
  api("POST", "/sources", { name: "fleet", url: gitServer.url("fleet"), branch: "main", interval_s: 3600 }),
  201,
);

t.test("a sync makes the tree's policies the source's, marked as such", async (t) => {
  const p = await eventually(async () => {
    const r = await api("GET", "/approval-policies/prod-applies");
    return r.status === 200 ? r.body : undefined;
  }, 30_000);
  t.same(p.actions, ["agent.apply", "assignment.apply"]);
  t.equal(p.selector, "env=prod");
  t.equal(p.approvals_required, 1);
  t.equal(p.source, "fleet");
  t.equal(p.commit, commit);
  t.equal(
    (await must(api("GET", "/approval-policies/api-owned"), 200)).source,
    null,
    "API policies are not the source's",
  );
  const created = (await audit("approval_policy.created")).find((e) => e.target.id === "prod-applies");
  t.equal(created.actor.id, "source:fleet", "audited as the source");
  t.equal(created.metadata.commit, commit);
});

t.test("the API refuses to change or delete a policy the source manages", async (t) => {
  const put = await api("PUT", "/approval-policies/prod-applies", {
    actions: ["agent.apply"],
    approvers: ["role:admin"],
    approvals_required: 2,
  });
  t.equal(put.status, 409);
  t.equal(put.body.code, "managed_by_source");
  t.match(put.body.detail, /managed by git source 'fleet'/);
  const del = await api("DELETE", "/approval-policies/prod-applies");
  t.equal(del.status, 409);
  t.equal(del.body.code, "managed_by_source");
  t.equal((await must(api("GET", "/approval-policies/prod-applies"), 200)).approvals_required, 1, "unchanged");
});

t.test("a refused policy fails the whole sync at its line; nothing changes", async (t) => {
  await repo.write("approval-policies/prod-applies.yaml", prodApplies(2, "approvers_typo: 1"));
  await repo.write(
    "approval-policies/ghosts.yaml",
    "actions: [agent.apply]\napprovers: ['operator:nobody']\napprovals_required: 1\n",
  );
  await repo.write(
    "approval-policies/api-owned.yaml",
    "actions: [agent.apply]\napprovers: ['role:admin']\napprovals_required: 1\n",
  );
  await repo.write("modules/motd.yaml", "name: motd\ndescription: changed\nresources: []\n");
  await repo.commit("bad policies");
  const s = await sync();
  t.equal(s.status, "error");
  const byFile = Object.fromEntries(s.errors.map((e: any) => [e.file, e]));
  t.equal(byFile["approval-policies/prod-applies.yaml"].code, "invalid_approval_policy");
  t.equal(byFile["approval-policies/prod-applies.yaml"].line, 7, "the unknown field's line");
  t.equal((await must(api("GET", "/modules/motd"), 200)).description ?? "", "", "the module did not change either");
  t.equal((await must(api("GET", "/approval-policies/prod-applies"), 200)).approvals_required, 1);

  // Shape fixed: now the auth service's own checks refuse (an approver nobody knows, a name the API owns).
  await repo.write("approval-policies/prod-applies.yaml", prodApplies(2));
  await repo.commit("typo fixed");
  const s2 = await sync();
  t.equal(s2.status, "error");
  const codes = Object.fromEntries(s2.errors.map((e: any) => [e.file, [e.code, e.line]]));
  t.same(codes["approval-policies/ghosts.yaml"], ["unknown_approver", 2], "at the approvers line");
  t.same(codes["approval-policies/api-owned.yaml"], ["managed_by_source", null]);
  t.equal((await must(api("GET", "/approval-policies/prod-applies"), 200)).approvals_required, 1, "all or nothing");
  t.equal((await api("GET", "/approval-policies/ghosts")).status, 404);
});

t.test("a fixed tree syncs: changed policy updated, dropped policy removed", async (t) => {
  await repo.remove("approval-policies/ghosts.yaml");
  await repo.remove("approval-policies/api-owned.yaml");
  await repo.write(
    "approval-policies/secrets.yaml",
    "actions: [access.request]\napprovers: ['role:admin']\napprovals_required: 1\n",
  );
  commit = await repo.commit("fixed");
  t.equal((await sync()).status, "ok");
  const p = await must(api("GET", "/approval-policies/prod-applies"), 200);
  t.equal(p.approvals_required, 2);
  t.equal(p.commit, commit);
  t.equal((await must(api("GET", "/approval-policies/secrets"), 200)).source, "fleet");

  await repo.remove("approval-policies/secrets.yaml");
  await repo.commit("drop one");
  t.equal((await sync()).status, "ok");
  t.equal((await api("GET", "/approval-policies/secrets")).status, 404, "removed with its file");
  const removed = (await audit("approval_policy.deleted")).find((e) => e.target.id === "secrets");
  t.equal(removed.actor.id, "source:fleet");
  t.equal((await api("GET", "/approval-policies/api-owned")).status, 200, "never the API's");
});

t.test("deleting the source releases its policies to the API", async (t) => {
  await must(api("DELETE", "/sources/fleet"), 204);
  const p = await must(api("GET", "/approval-policies/prod-applies"), 200);
  t.equal(p.source, null);
  t.equal(p.approvals_required, 2, "it stays in force");
  await must(
    api("PUT", "/approval-policies/prod-applies", {
      actions: ["agent.apply"],
      approvers: ["role:admin"],
      approvals_required: 3,
    }),
    200,
  );
});
