import t, { type Test } from "tap";
import { execFileSync } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ed25519, eventually } from "@orch/kit/testing";
import { startStateStack } from "./lib/state-stack.js";

// Four-eyes catalog writes (catalog.write, docs/approvals.md) with real processes (auth, agents,
// secrets, audit, state, gateway) and two operators: alice requests, bob approves. The base objects
// are created before the policy: once it holds `catalog.write` on `*`, the admin's writes are held
// too (unless the admin breaks glass). Needs `npm run build`.
const { system } = await startStateStack(t, { name: "approvals-catalog", keyByte: 41, extraServices: ["audit"] });

type Res = Awaited<ReturnType<typeof system.api>>;
const as = (token: string) => (method: string, path: string, body?: unknown) =>
  system.api(method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
const must = async (p: Promise<Res>, status: number) => {
  const r = await p;
  if (r.status !== status) throw new Error(`expected ${status}, got ${r.status}: ${r.text}`);
  return r.body;
};
const problem = (t: Test, r: Res, status: number, code: string) => {
  t.equal(r.status, status, `status ${status}`);
  t.equal(r.body?.code, code, `code ${code}`);
};

const admin = as(await system.login(system.admin));
async function operator(name: string) {
  const key = ed25519();
  const op = await must(admin("POST", "/operators", { name, public_key: key.publicKeyHex, role: "operator" }), 201);
  return { id: op.id as string, api: as(await system.login(key)) };
}
const aliceKey = ed25519();
await must(admin("POST", "/operators", { name: "alice", public_key: aliceKey.publicKeyHex, role: "operator" }), 201);
const aliceToken = await system.login(aliceKey);
const alice = { api: as(aliceToken) };
const bob = await operator("bob");

const events = async (type: string) =>
  (await must(admin("GET", `/audit?event_type=${type}&limit=100`), 200)).events as any[];
const moduleYaml = (name: string, text: string) =>
  [
    `name: ${name}`,
    "resources:",
    `  - { id: conf, type: file, path: '/tmp/${name}.conf', content: "${text}\\n" }`,
    "",
  ].join("\n");
const web = (selector: string) => ({ selector, modules: ["base"], description: "the web tier" });
const myRequests = async () =>
  ((await must(alice.api("GET", "/change-requests?mine=true&limit=100"), 200)).requests as any[]).length;
const approve = (id: string) => bob.api("POST", `/change-requests/${id}/approve`, { comment: "ok" });

// Before any policy: the catalog as it always was.
await must(admin("POST", "/modules", { name: "base", content: moduleYaml("base", "v1") }), 201);
await must(admin("POST", "/modules", { name: "old", content: moduleYaml("old", "v1") }), 201);
await must(admin("POST", "/assignments", { name: "web", ...web("env=prod") }), 201);
await must(admin("POST", "/assignments", { name: "gone", selector: "*", modules: ["base"] }), 201);

t.test("not held outside a catalog.write policy", async (t) => {
  await must(
    admin("PUT", "/approval-policies/applies-only", {
      actions: ["assignment.apply"],
      selector: "*",
      approvals_required: 1,
      approvers: ["operator:bob"],
    }),
    200,
  );
  const r = await alice.api("POST", "/assignments", { name: "free", selector: "*", modules: ["base"] });
  t.equal(r.status, 201, "an apply policy does not hold catalog writes");
  t.equal(await myRequests(), 0);
  await must(admin("DELETE", "/approval-policies/applies-only"), 204);
  await must(
    admin("PUT", "/approval-policies/catalog", {
      actions: ["catalog.write"],
      selector: "*",
      approvals_required: 1,
      approvers: ["operator:bob"],
      expires_after_seconds: 3600,
    }),
    200,
  );
});

let first: string;
t.test("an operator's assignment update is held, and nothing changes", async (t) => {
  const r = await alice.api("PUT", "/assignments/web", { ...web("env=prod,tier=web"), reason: "narrow it" });
  t.equal(r.status, 202, r.text);
  t.equal(r.body.status, "held");
  t.equal(r.body.summary, "update assignment web (selector)");
  first = r.body.change_request_id;
  t.equal((await must(admin("GET", "/assignments/web"), 200)).selector, "env=prod", "unchanged");
  const cr = await must(bob.api("GET", `/change-requests/${first}`), 200);
  t.equal(cr.status, "pending");
  t.equal(cr.action, "catalog.write");
  t.equal(cr.target_type, "assignment");
  t.equal(cr.target_name, "web");
  t.equal(cr.reason, "narrow it");
  t.equal(cr.content.op, "update");
  t.ok(cr.content.base_hash, "frozen against the assignment as stored");
  t.same(cr.content.diff.fields, [{ field: "selector", before: "env=prod", after: "env=prod,tier=web" }]);
  t.equal(cr.content.after.selector, "env=prod,tier=web");
});

t.test("an invalid write is refused at once, with no request", async (t) => {
  const before = await myRequests();
  problem(
    t,
    await alice.api("PUT", "/assignments/web", { selector: "env=prod", modules: ["nope"] }),
    404,
    "module_not_found",
  );
  problem(
    t,
    await alice.api("PUT", "/assignments/web", { selector: "env in (", modules: ["base"] }),
    400,
    "invalid_selector",
  );
  problem(t, await alice.api("DELETE", "/assignments/nothing"), 404, "assignment_not_found");
  problem(t, await alice.api("DELETE", "/modules/base"), 409, "module_in_use");
  problem(
    t,
    await alice.api("POST", "/modules", { name: "bad", content: "name: other\nresources: []\n" }),
    400,
    "name_mismatch",
  );
  t.equal(await myRequests(), before, "nothing submitted");
});

t.test("the approver approves: it executes once, as the requester, with the approver recorded", async (t) => {
  problem(t, await alice.api("POST", `/change-requests/${first}/approve`, {}), 403, "own_change_request");
  const cr = await must(approve(first), 200);
  t.equal(cr.status, "executed");
  t.equal(cr.result, "updated assignment web");
  t.equal((await must(admin("GET", "/assignments/web"), 200)).selector, "env=prod,tier=web");
  const updated = await eventually(async () =>
    (await events("assignment.updated")).filter((e) => e.metadata.change_request_id === first),
  );
  t.equal(updated.length, 1, "written once");
  t.equal(updated[0].actor.name, "alice", "as the requester");
  t.same(updated[0].metadata.approved_by, ["bob"]);
  problem(t, await approve(first), 409, "change_request_not_pending");
});

t.test("a module upload is held, then stored on approval", async (t) => {
  const r = await alice.api("POST", "/modules", { name: "fresh", content: moduleYaml("fresh", "v1"), reason: "new" });
  t.equal(r.status, 202, r.text);
  t.equal(r.body.summary, "create module fresh (1 resource)");
  problem(t, await alice.api("GET", "/modules/fresh"), 404, "module_not_found");
  const cr = await must(bob.api("GET", `/change-requests/${r.body.change_request_id}`), 200);
  t.equal(cr.content.after.resources, 1);
  t.match(cr.content.diff.lines.added.join("\n"), /name: fresh/);
  t.equal((await must(approve(r.body.change_request_id), 200)).status, "executed");
  const m = await must(alice.api("GET", "/modules/fresh"), 200);
  t.equal(m.sha256, cr.content.after.sha256, "the approved version");
  t.equal(m.uploaded_by_name, "alice");
  const uploaded = await eventually(async () =>
    (await events("module.uploaded")).find((e) => e.metadata.change_request_id === r.body.change_request_id),
  );
  t.same(uploaded.metadata.approved_by, ["bob"]);
});

t.test("break-glass: only an admin, only with a reason, audited", async (t) => {
  problem(
    t,
    await alice.api("PUT", "/assignments/web", { ...web("env=dev"), break_glass: true, reason: "outage" }),
    403,
    "break_glass_forbidden",
  );
  problem(
    t,
    await admin("PUT", "/assignments/web", { ...web("env=dev"), break_glass: true }),
    400,
    "break_glass_reason_required",
  );
  const held = await admin("POST", "/modules", { name: "admins", content: moduleYaml("admins", "v1") });
  t.equal(held.status, 202, "the admin's own write is held too");
});

t.test(
  "changed after the request: the approval is refused with plan_changed and the request stays pending",
  async (t) => {
    const r = await alice.api("PUT", "/assignments/web", { ...web("env=prod,tier=api"), reason: "api tier" });
    t.equal(r.status, 202, r.text);
    const id = r.body.change_request_id;
    const direct = await admin("PUT", "/assignments/web", { ...web("env=dev"), break_glass: true, reason: "outage" });
    t.equal(direct.status, 200, direct.text);
    t.equal(direct.body.selector, "env=dev");
    const bypassed = await eventually(async () =>
      (await events("approval.bypassed")).find((e) => e.metadata.action === "catalog.write"),
    );
    t.equal(bypassed.severity, "critical");
    t.equal(bypassed.metadata.reason, "outage");
    t.equal(bypassed.metadata.policy, "catalog");
    t.same(bypassed.metadata.notify_operator_ids, [bob.id]);
    problem(t, await approve(id), 409, "plan_changed");
    t.equal((await must(bob.api("GET", `/change-requests/${id}`), 200)).status, "pending");
    t.equal((await must(admin("GET", "/assignments/web"), 200)).selector, "env=dev", "the held write did not run");
  },
);

t.test("deletes are held, then done on approval", async (t) => {
  const a = await alice.api("DELETE", "/assignments/gone?reason=unused");
  t.equal(a.status, 202, a.text);
  t.equal(a.body.summary, "delete assignment gone");
  await must(alice.api("GET", "/assignments/gone"), 200);
  t.equal((await must(approve(a.body.change_request_id), 200)).status, "executed");
  problem(t, await alice.api("GET", "/assignments/gone"), 404, "assignment_not_found");

  const m = await alice.api("DELETE", "/modules/old");
  t.equal(m.status, 202, m.text);
  await must(alice.api("GET", "/modules/old"), 200);
  t.equal((await must(approve(m.body.change_request_id), 200)).status, "executed");
  problem(t, await alice.api("GET", "/modules/old"), 404, "module_not_found");
  const deleted = await eventually(async () =>
    (await events("module.deleted")).find((e) => e.metadata.change_request_id === m.body.change_request_id),
  );
  t.equal(deleted.actor.name, "alice");
});

t.test("a held upload naming a blob keeps it from deletion until it runs", async (t) => {
  const bytes = randomBytes(4096);
  const digest = `sha256:${createHash("sha256").update(bytes).digest("hex")}`;
  const put = await fetch(new URL(`/api/v1/blobs/${digest}`, system.url), {
    method: "PUT",
    headers: { authorization: `Bearer ${aliceToken}`, "content-type": "application/octet-stream" },
    body: bytes,
  });
  t.equal(put.status, 201);
  const content = [
    "name: bin",
    "resources:",
    "  - { id: b, type: file, path: /tmp/bin.dat, source: " + digest + " }",
    "",
  ].join("\n");
  const r = await alice.api("POST", "/modules", { name: "bin", content });
  t.equal(r.status, 202, r.text);
  problem(t, await admin("DELETE", `/blobs/${digest}`), 409, "blob_in_use");
  t.equal((await must(approve(r.body.change_request_id), 200)).status, "executed");
  t.equal((await must(alice.api("GET", "/modules/bin"), 200)).resource_count, 1);
});

t.test("a held bundle upload keeps its files' blobs, and stores the bundle on approval", async (t) => {
  const root = mkdtempSync(join(tmpdir(), "orch-e2e-catalog-bundle-"));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const data = randomBytes(2048);
  mkdirSync(join(root, "files"));
  writeFileSync(join(root, "files", "tool.bin"), data);
  writeFileSync(
    join(root, "module.yaml"),
    "name: pack\nresources:\n  - { id: t, type: file, path: /tmp/pack-tool.bin, source: files/tool.bin }\n",
  );
  const archive = execFileSync("tar", ["-cz", "-C", root, "module.yaml", "files"]);
  const r = await fetch(new URL("/api/v1/modules/pack/bundle?reason=package", system.url), {
    method: "PUT",
    headers: { authorization: `Bearer ${aliceToken}`, "content-type": "application/octet-stream" },
    body: archive,
  });
  const body = (await r.json()) as { status: string; change_request_id: string; summary: string };
  t.equal(r.status, 202, JSON.stringify(body));
  t.equal(body.summary, "create module pack (1 resource)");
  problem(t, await alice.api("GET", "/modules/pack"), 404, "module_not_found");
  const digest = `sha256:${createHash("sha256").update(data).digest("hex")}`;
  problem(t, await admin("DELETE", `/blobs/${digest}`), 409, "blob_in_use");
  const cr = await must(bob.api("GET", `/change-requests/${body.change_request_id}`), 200);
  t.equal(cr.reason, "package");
  t.equal(cr.content.after.files, 1);
  t.equal((await must(approve(body.change_request_id), 200)).status, "executed");
  const m = await must(alice.api("GET", "/modules/pack"), 200);
  t.same(
    m.files.map((f: any) => [f.path, f.digest]),
    [["files/tool.bin", digest]],
  );
});
