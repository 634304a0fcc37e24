import { createHmac } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { fromBinary } from "@bufbuild/protobuf";
import { SourceWebhookRequestSchema, type SourceWebhookRequest } from "@orch/contracts";
import { createTestRepo, ed25519, eventually, startGitHttpServer } from "@orch/kit/testing";
import { WEBHOOK_DUPLICATE, WEBHOOK_QUEUED } from "../../state/src/handlers/source-webhook.js";
import { startStack } from "../../state/test/harness.js";
import { call, login } from "./harness.js";

// /api/v1/sources on real NATS and Postgres with the real state service syncing a real repository
// over git's smart HTTP: the JSON shapes, input refused before the bus with the service's codes,
// and the public webhook delivering the forge's exact bytes to the HMAC check.

const root = mkdtempSync(join(tmpdir(), "gw-src-root-"));
const cache = mkdtempSync(join(tmpdir(), "gw-src-cache-"));
t.teardown(() => {
  for (const d of [root, cache]) rmSync(d, { recursive: true, force: true });
});
// The scheduler stays out of the way (longest tick): every sync here is one the test asked for.
const s = await startStack(t, { state: { sources_dir: cache, sources_tick_ms: 60_000 } });
const git = await startGitHttpServer(root);
t.teardown(() => git.close());
const marks = s.tempDir();
await s.addAgent({ name: "web-1", tags: { role: "web" } });

const moduleYaml = (content: string) =>
  `name: web\nresources:\n  - { id: mark, type: file, path: '${marks}/{{ attributes.hostname }}', content: '${content}' }\n`;
const repo = await createTestRepo(join(root, "fleet"));
await repo.write("modules/web.yaml", moduleYaml("one"));
await repo.write(
  "assignments/web.yaml",
  "selector: role=web\nmodules: [web]\napply_on_sync: false\nbatch: 50%\nmax_failures: 2\n",
);
const first = await repo.commit("web");

const SECRET = "a-webhook-secret-of-at-least-16";
const api = s.api;

/** Copies of every request the gateway sends to one state RPC (a plain subscriber beside the service's queue). */
async function spy(method: string) {
  const seen: Uint8Array[] = [];
  const sub = s.infra.subscribe(`orch.state.${method}`, { callback: (_e, m) => void seen.push(m.data) });
  t.teardown(() => sub.unsubscribe());
  await s.infra.flush();
  return seen;
}

t.test("create, sync, get, list and delete: the JSON of a source and of what it manages", async (t) => {
  const created = await api("POST", "/sources", { name: "fleet", url: git.url("fleet"), webhook_secret: SECRET });
  t.equal(created.status, 201, created.text);
  t.match(created.body, {
    name: "fleet",
    url: git.url("fleet"),
    branch: "main",
    path: "",
    interval_s: 300,
    auth: "none",
    status: "pending",
    commit: null,
    synced_at: null,
    errors: [],
    webhook_secret: SECRET,
  });
  t.match(created.body.created_at, /^\d{4}-\d\d-\d\dT/);

  const synced = await api("POST", "/sources/fleet/sync");
  t.equal(synced.status, 200, synced.text);
  t.match(synced.body, { status: "ok", commit: first, error: null, module_count: 1, assignment_count: 1 });
  t.notOk("webhook_secret" in synced.body, "the secret is shown only at creation");
  t.match(synced.body.synced_at, /^\d{4}-\d\d-\d\dT/);

  const mod = await api("GET", "/modules/web");
  t.match(mod.body, { source: "fleet", commit: first, removed_from_source: false });
  const asg = await api("GET", "/assignments/web");
  t.match(asg.body, { source: "fleet", commit: first, apply_on_sync: false, sync_batch: "50%", sync_max_failures: 2 });
  const byHand = await api("POST", "/assignments", { name: "by-hand", selector: "*", modules: ["web"] });
  t.match(byHand.body, { source: null, sync_batch: null, sync_max_failures: null }, "null when unset");
  t.equal((await api("DELETE", "/assignments/by-hand")).status, 204);
  const edit = await api("PUT", "/assignments/web", { selector: "*", modules: ["web"] });
  t.equal(edit.status, 409);
  t.equal(edit.body.code, "managed_by_source");

  const got = await api("GET", "/sources/fleet");
  t.same(got.body, synced.body);
  const list = await api("GET", "/sources?limit=10");
  t.same(list.body, { sources: [synced.body], has_more: false, next_cursor: null });
  t.equal((await api("GET", "/sources/nope")).body.code, "source_not_found");
  const again = await api("POST", "/sources", { name: "fleet", url: git.url("fleet") });
  t.equal(again.body.code, "source_exists");
  t.notOk(again.body.webhook_secret);

  const plain = await api("GET", "/modules");
  t.ok(
    plain.body.modules.every((m: { source: string | null }) => m.source === "fleet"),
    "lists carry the fields too",
  );
});

t.test("bad input: 400 with the service's code and field, nothing sent to the state service", async (t) => {
  const sent = await spy("CreateSource");
  const token = "ghp_the-token-value-never-echoed";
  const url = git.url("fleet");
  const cases: [Record<string, unknown>, string, string][] = [
    [{ url: "https://user:pw@example.com/r.git" }, "invalid_source", "url"],
    [{ url: "ftp://example.com/r.git" }, "invalid_source", "url"],
    [{ url: "x".repeat(3000) }, "invalid_source", "url"],
    [{ branch: "a..b" }, "invalid_source", "branch"],
    [{ branch: "-x" }, "invalid_source", "branch"],
    [{ path: "../up" }, "invalid_source", "path"],
    [{ path: "/abs" }, "invalid_source", "path"],
    [{ interval_s: 5 }, "invalid_source", "interval_s"],
    [{ interval_s: 86_401 }, "invalid_source", "interval_s"],
    [{ webhook_secret: "short" }, "invalid_source", "webhook_secret"],
    [{ url: "git@example.com:r.git", auth: { token } }, "invalid_source", "auth"],
    [{ url: "http://example.com/r.git", auth: { token } }, "invalid_source", "auth"],
    [{ auth: { ssh_key: "-----BEGIN OPENSSH PRIVATE KEY-----\n" } }, "invalid_source", "auth"],
    [{ auth: { token, ssh_key: "k" } }, "invalid_source", "auth"],
    [{ auth: { username: "bot" } }, "invalid_source", "auth"],
    [{ name: "Bad Name" }, "invalid_request", "name"],
    [{ interval_s: 1.5 }, "invalid_request", "interval_s"],
    [{ auth: { token, password: "x" } }, "invalid_request", "auth"],
  ];
  for (const [patch, code, field] of cases) {
    const res = await api("POST", "/sources", { name: "bad", url, ...patch });
    const label = JSON.stringify(patch).slice(0, 70);
    t.equal(res.status, 400, label);
    t.match(res.type, /problem\+json/);
    t.equal(res.body.code, code, label);
    t.equal(res.body.errors?.[0]?.field, field, label);
    t.notMatch(res.text, token, "the token is never echoed");
  }
  const plan = await spy("PlanSource");
  for (const [body, code] of [
    [{ ref: "-x" }, "invalid_ref"],
    [{ ref: "a b" }, "invalid_ref"],
    [{ wait_seconds: 301 }, "invalid_request"],
  ] as const) {
    const res = await api("POST", "/sources/fleet/plan", body);
    t.equal(res.status, 400);
    t.equal(res.body.code, code);
  }
  await s.infra.flush();
  t.equal(sent.length, 0, "no CreateSource request");
  // The spy does see a request the gateway lets through.
  t.equal((await api("POST", "/sources", { name: "good", url })).status, 201);
  t.equal((await api("DELETE", "/sources/good")).status, 204);
  await s.infra.flush();
  t.equal(sent.length, 1, "the valid one was sent");
  t.equal(plan.length, 0, "no PlanSource request");
  t.equal((await api("GET", "/sources/bad")).status, 404, "nothing stored");
});

t.test("who may call what: writes are admin-only, reads and plans any operator", async (t) => {
  const byRoute = Object.fromEntries(
    s.gw.routes.filter((r) => r.path.startsWith("/api/v1/sources")).map((r) => [`${r.method} ${r.path}`, r.auth]),
  );
  t.same(byRoute, {
    "POST /api/v1/sources": "admin",
    "GET /api/v1/sources": "operator",
    "GET /api/v1/sources/{name}": "operator",
    "DELETE /api/v1/sources/{name}": "admin",
    "POST /api/v1/sources/{name}/sync": "admin",
    "POST /api/v1/sources/{name}/plan": "operator",
    "POST /api/v1/sources/{name}/webhook": "public",
  });
  const doc = (await call(s.gw.url, "GET", "/api/v1/openapi.json")).body;
  const hook = doc.paths["/api/v1/sources/{name}/webhook"].post;
  t.same(Object.keys(hook.requestBody.content), ["*/*"], "the webhook takes any bytes of any type");
  t.match(hook, { "x-auth": "public", security: [], responses: { 202: {}, 401: {}, 429: {} } });
  const key = ed25519();
  await api("POST", "/operators", { name: "olga", public_key: key.publicKeyHex, role: "operator" });
  const token = await login(s.gw.url, key);
  const as = (method: string, path: string, body?: unknown) =>
    call(s.gw.url, method, `/api/v1${path}`, { token, ...(body !== undefined ? { body } : {}) });
  t.equal((await as("GET", "/sources/fleet")).status, 200);
  t.equal((await as("POST", "/sources/fleet/sync")).body.code, "admin_required");
  t.equal((await as("DELETE", "/sources/fleet")).body.code, "admin_required");
  t.equal((await as("POST", "/sources", { name: "x", url: git.url("fleet") })).body.code, "admin_required");
});

t.test("plan of a branch: per-agent diffs, nothing changes", async (t) => {
  await repo.branch("feature");
  await repo.write("modules/web.yaml", moduleYaml("two"));
  const feature = await repo.commit("feature");
  await repo.checkout("main");
  const res = await api("POST", "/sources/fleet/plan", { ref: "feature", wait_seconds: 30 });
  t.equal(res.status, 200, res.text);
  t.match(res.body, {
    source: "fleet",
    ref: "feature",
    commit: feature,
    current_commit: first,
    errors: [],
    modules_changed: ["web"],
    modules_removed: [],
    complete: true,
  });
  const web = res.body.assignments.find((a: { name: string }) => a.name === "web");
  t.equal(web.change, "updated");
  t.match(web.run, { assignment: "web", kind: "plan", source: "fleet", commit: feature });
  t.equal(web.operations.length, 1);
  t.match(web.operations[0], { node_name: "web-1", kind: "plan", status: "succeeded" });
  t.match(web.operations[0].results[0].diff, /two/);
  t.equal((await api("GET", "/modules/web")).body.commit, first, "the catalog is unchanged");
  t.equal((await api("POST", "/sources/fleet/plan", { ref: "no-such-branch" })).body.code, "source_ref_not_found");
});

/** A GitHub push of `after` to main, as GitHub formats it (indented, non-ASCII, CRLF at the end). */
function pushPayload(after: string): Buffer {
  const fixture = readFileSync(new URL("../../state/test/fixtures/webhooks/github-push.json", import.meta.url), "utf8");
  const body = JSON.parse(fixture) as Record<string, unknown>;
  body.ref = "refs/heads/main";
  body.after = after;
  body.head_commit = { id: after, message: "change web — ünïcødé ✓" };
  return Buffer.from(`${JSON.stringify(body, null, 2)}\r\n`, "utf8");
}
const sign = (body: Buffer, secret = SECRET) => createHmac("sha256", secret).update(body).digest("hex");
const webhook = (headers: Record<string, string>, body: Buffer | string) =>
  fetch(`${s.gw.url}/api/v1/sources/fleet/webhook`, { method: "POST", headers, body });

t.test("webhook: public, the raw body reaches the service byte for byte, and syncs the push", async (t) => {
  await repo.write("modules/web.yaml", moduleYaml("three"));
  const head = await repo.commit("three");
  const body = pushPayload(head);
  const forwarded = await spy("SourceWebhook");
  const res = await webhook(
    {
      "content-type": "application/json",
      "x-github-event": "push",
      "x-hub-signature-256": `sha256=${sign(body)}`,
      authorization: "Bearer not-for-the-state-service",
      cookie: "orch_session=also-not",
    },
    body,
  );
  t.equal(res.status, 202);
  t.same(await res.json(), { forge: "github", event: "push", synced: true, reason: WEBHOOK_QUEUED, commit: head });
  await s.infra.flush();
  t.equal(forwarded.length, 1);
  const req: SourceWebhookRequest = fromBinary(SourceWebhookRequestSchema, forwarded[0]!);
  t.equal(req.name, "fleet");
  t.ok(Buffer.from(req.body).equals(body), "the exact bytes");
  t.equal(req.headers["x-github-event"], "push");
  t.notOk("authorization" in req.headers, "no authorization header");
  t.notOk("cookie" in req.headers, "no cookie");
  // The answer does not wait for the sync (a forge gives up after about 10 s).
  await eventually(async () => ((await api("GET", "/modules/web")).body.commit === head ? true : undefined), 20_000);
  t.pass("the push was synced");

  // GitHub's form encoding: any content type reaches the service as sent.
  const form = Buffer.from(`payload=${encodeURIComponent(pushPayload(head).toString("utf8"))}`);
  const formRes = await webhook(
    {
      "content-type": "application/x-www-form-urlencoded",
      "x-github-event": "push",
      "x-hub-signature-256": `sha256=${sign(form)}`,
    },
    form,
  );
  t.equal(formRes.status, 202);
  t.equal(((await formRes.json()) as { commit: string }).commit, head);

  const ping = await webhook(
    {
      "content-type": "application/json",
      "x-github-event": "ping",
      "x-hub-signature-256": `sha256=${sign(Buffer.from("{}"))}`,
    },
    "{}",
  );
  t.equal(ping.status, 202);
  t.match(await ping.json(), { synced: false, reason: /ping/ });
});

t.test("webhook: a wrong signature is 401 and nothing syncs; limits and unknown sources", async (t) => {
  await repo.write("modules/web.yaml", moduleYaml("four"));
  const head = await repo.commit("four");
  const body = pushPayload(head);
  const res = await webhook(
    {
      "content-type": "application/json",
      "x-github-event": "push",
      "x-hub-signature-256": `sha256=${sign(body, "wrong-secret-0123456789")}`,
    },
    body,
  );
  t.equal(res.status, 401);
  t.match(res.headers.get("content-type"), /problem\+json/);
  t.equal(((await res.json()) as { code: string }).code, "webhook_signature_invalid");
  t.not((await api("GET", "/modules/web")).body.commit, head, "no sync");

  const unsigned = await webhook({ "content-type": "text/plain" }, "hello");
  t.equal(unsigned.status, 400);
  t.equal(((await unsigned.json()) as { code: string }).code, "invalid_webhook");

  const big = await webhook({ "content-type": "application/json" }, Buffer.alloc(1_048_577, 0x20));
  t.equal(big.status, 413);
  t.equal(((await big.json()) as { code: string }).code, "body_too_large");

  const badName = await fetch(`${s.gw.url}/api/v1/sources/Bad%20Name/webhook`, { method: "POST", body: "{}" });
  t.equal(badName.status, 400);
});

t.test("webhook: an unknown source answers exactly like a wrong signature", async (t) => {
  const body = pushPayload("0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c");
  const answer = async (name: string, headers: Record<string, string>) => {
    const res = await fetch(`${s.gw.url}/api/v1/sources/${name}/webhook`, { method: "POST", headers, body });
    const { request_id: _, ...rest } = (await res.json()) as Record<string, unknown>;
    return { status: res.status, type: res.headers.get("content-type"), body: rest };
  };
  const forges: Array<[string, Record<string, string>]> = [
    ["github", { "x-github-event": "push", "x-hub-signature-256": `sha256=${sign(body, "wrong-secret-0123456789")}` }],
    ["gitea", { "x-gitea-event": "push", "x-gitea-signature": sign(body, "wrong-secret-0123456789") }],
    ["gitlab", { "x-gitlab-event": "Push Hook", "x-gitlab-token": "wrong-token-0123456789" }],
    ["no forge headers", {}],
  ];
  for (const [what, headers] of forges) {
    const h = { "content-type": "application/json", ...headers };
    const known = await answer("fleet", h);
    const unknown = await answer("no-such-source", h);
    t.equal(unknown.status, what === "no forge headers" ? 400 : 401, `${what}: status`);
    t.same(unknown, known, `${what}: status, type and body identical for a known and an unknown source`);
  }
  // Even signed with the known source's real secret: another name is still only a bad signature.
  const signed = {
    "content-type": "application/json",
    "x-github-event": "push",
    "x-hub-signature-256": `sha256=${sign(body)}`,
  };
  const other = await answer("no-such-source", signed);
  t.equal(other.status, 401);
  t.equal(other.body.code, "webhook_signature_invalid");
  t.notMatch(JSON.stringify(other.body), /not found|no git source|no-such-source/, "nothing says the name is unknown");
});

t.test("webhook: a replayed delivery is answered 202 and does not sync again, also after a restart", async (t) => {
  await repo.write("modules/web.yaml", moduleYaml("five"));
  const head = await repo.commit("five");
  const body = pushPayload(head);
  const headers = (delivery: string) => ({
    "content-type": "application/json",
    "x-github-event": "push",
    "x-github-delivery": delivery,
    "x-hub-signature-256": `sha256=${sign(body)}`,
  });
  const deliver = async (delivery: string) => {
    const res = await webhook(headers(delivery), body);
    t.equal(res.status, 202, `delivery ${delivery}: 202`);
    return (await res.json()) as { synced: boolean; reason: string };
  };
  const first = await deliver("a1b2c3d4-0000-4000-8000-000000000001");
  t.same(first, { forge: "github", event: "push", synced: true, reason: WEBHOOK_QUEUED, commit: head });
  // The source's commit and attempted_at are written together when the sync ends.
  const synced = await eventually(async () => {
    const src = (await api("GET", "/sources/fleet")).body;
    return src.commit === head ? src : undefined;
  }, 20_000);

  // The same delivery again (a forge's redelivery or a replay), and the same signed body under a
  // made-up delivery id (the id header is not signed): neither syncs.
  for (const id of ["a1b2c3d4-0000-4000-8000-000000000001", "ffffffff-0000-4000-8000-000000000002"]) {
    t.same(await deliver(id), {
      forge: "github",
      event: "push",
      synced: false,
      reason: WEBHOOK_DUPLICATE,
      commit: head,
    });
  }
  // Remembered in Postgres: a restarted state service (another replica) refuses it too. Stopping
  // the old one waits for its syncs, so one the duplicates had started would show in attempted_at.
  await s.restartState();
  t.same(await deliver("a1b2c3d4-0000-4000-8000-000000000001"), {
    forge: "github",
    event: "push",
    synced: false,
    reason: WEBHOOK_DUPLICATE,
    commit: head,
  });
  await s.restartState();
  t.equal((await api("GET", "/sources/fleet")).body.attempted_at, synced.attempted_at, "no sync after the first");
});

t.test("webhook: rate limited per address and source like the sign-in routes", async (t) => {
  const statuses: number[] = [];
  const started = Date.now();
  for (let i = 0; i < 62; i++)
    statuses.push((await fetch(`${s.gw.url}/api/v1/sources/flood/webhook`, { method: "POST", body: "{}" })).status);
  // The bucket regains a token a second (60 a minute): a slow burst may see that many more through.
  const regained = Math.floor((Date.now() - started) / 1000);
  t.same(
    statuses.slice(0, 60),
    Array(60).fill(400),
    "60 a minute reach the service (gateway.auth_rate_limit_per_minute)",
  );
  const after = statuses.slice(60);
  t.ok(
    after.every((x) => x === 429 || x === 400),
    "past the budget: held back (429) or let through by a regained token",
  );
  t.ok(after.filter((x) => x === 400).length <= regained, "no more through than the tokens regained");
  if (regained === 0) t.same(after, [429, 429]);
  const other = await fetch(`${s.gw.url}/api/v1/sources/other/webhook`, { method: "POST", body: "{}" });
  t.equal(other.status, 400, "another source's deliveries are not held back");
});

t.test("delete: 204, the managed objects stay, unmanaged", async (t) => {
  t.equal((await api("DELETE", "/sources/fleet")).status, 204);
  t.equal((await api("GET", "/sources/fleet")).body.code, "source_not_found");
  t.match((await api("GET", "/modules/web")).body, { source: null, commit: null });
  t.match((await api("GET", "/assignments/web")).body, { source: null, commit: null, apply_on_sync: false });
});
