import { createHmac } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { type AddressInfo, createServer, type Socket } from "node:net";
import { join } from "node:path";
import t from "tap";
import type { MessageInitShape } from "@bufbuild/protobuf";
import type { CreateSourceRequestSchema } from "@orch/contracts";
import { OrchError, withJobLock } from "@orch/kit";
import { createTestRepo, eventually, startGitHttpServer } from "@orch/kit/testing";
import { WEBHOOK_QUEUED } from "../src/handlers/source-webhook.js";
import { ADMIN, startStack } from "./harness.js";

// The git sources API on the real stack (real NATS, Postgres, git over smart HTTP): input rules,
// sealed secrets, the scheduler's first sync, the 409 on objects a source owns, webhooks of the
// three forges and deletion releasing what the source managed.
const root = mkdtempSync(join(tmpdir(), "orch-src-api-root-"));
const cache = mkdtempSync(join(tmpdir(), "orch-src-api-cache-"));
t.teardown(() => {
  for (const d of [root, cache]) rmSync(d, { recursive: true, force: true });
});
const s = await startStack(t, { state: { sources_dir: cache, sources_tick_ms: 200 } });
const rpc = s.stateRpc;
const as = { actor: ADMIN };

const TOKEN = "tok-5ecr3t-d0-not-leak-0123456789";
const HOOK_SECRET = "hook-5ecr3t-d0-not-leak-0123456789";
const server = await startGitHttpServer(root, { token: TOKEN });
t.teardown(() => server.close());
const repo = await createTestRepo(join(root, "fleet"));

const moduleYaml = (name: string, content: string) =>
  `name: ${name}\nresources:\n  - id: f\n    type: file\n    path: /tmp/orch-src-api-${name}\n    content: '${content}'\n`;
await repo.write("modules/web.yaml", moduleYaml("web", "v1"));
await repo.write("assignments/web.yaml", "selector: 'role=web'\nmodules:\n  - web\n");
const c1 = await repo.commit("web");

const reasonOf = (p: Promise<unknown>) =>
  p.then(
    () => "ok",
    (e: unknown) => (e instanceof OrchError ? e.reason : String(e)),
  );
const errorOf = async (p: Promise<unknown>): Promise<OrchError> => {
  try {
    await p;
  } catch (e) {
    if (e instanceof OrchError) return e;
    throw e;
  }
  throw new Error("expected an error");
};
const req = (o: Partial<MessageInitShape<typeof CreateSourceRequestSchema>>) => ({
  name: "fleet",
  url: server.url("fleet"),
  branch: "",
  path: "",
  ...o,
});
const source = (name = "fleet") => rpc.getSource({ name }, as);
const synced = (commit: string, name = "fleet") =>
  eventually(async () => {
    const x = await source(name);
    return x.status === "ok" && x.commit === commit ? x : undefined;
  }, 20_000);
/**
 * The last attempt succeeded, no sync is queued and none holds the source: its next sync is one
 * interval after the last (a claim pushes it past that, a queued request pulls it before), so the
 * scheduler leaves it alone and only a new request syncs it. A test that needs to know which
 * trigger ran a sync, or that none ran, starts from here: a request queued by an earlier test keeps
 * the source due, and the scheduled sync it makes would otherwise fetch the commit under test first.
 */
const settled = (name = "fleet") =>
  eventually(async () => {
    const x = await source(name);
    return x.status === "ok" && x.nextSyncAt === x.syncedAt + x.intervalS * 1000 ? x : undefined;
  }, 20_000);
const sourceRows = async () => (await s.state.deps.pool.query("SELECT name FROM sources")).rows.length;

t.test("every refused input answers its code, names the field and stores nothing", async (t) => {
  const key = "-----BEGIN OPENSSH PRIVATE KEY-----\nAAAA\n-----END OPENSSH PRIVATE KEY-----\n";
  const cases: Array<[string, Partial<MessageInitShape<typeof CreateSourceRequestSchema>>, string, string]> = [
    ["bad name", { name: "no spaces!" }, "invalid_request", "name"],
    ["unknown scheme", { url: "ftp://example.com/x.git" }, "invalid_source", "url"],
    ["credentials in the url", { url: "https://bob:pw-in-url@example.com/x.git" }, "invalid_source", "url"],
    ["file url where not allowed", { url: "file:///srv/fleet" }, "source_url_not_allowed", "url"],
    ["branch", { branch: "a..b" }, "invalid_source", "branch"],
    ["path escaping", { path: "../etc" }, "invalid_source", "path"],
    ["interval too short", { intervalS: 5 }, "invalid_source", "interval_s"],
    ["token over ssh", { url: "git@example.com:o/r.git", auth: { token: TOKEN } }, "invalid_source", "auth"],
    ["token over remote http", { url: "http://example.com/r.git", auth: { token: TOKEN } }, "invalid_source", "auth"],
    ["ssh key over https", { url: "https://example.com/r.git", auth: { sshKey: key } }, "invalid_source", "auth"],
    [
      "token and key",
      { url: "https://example.com/r.git", auth: { token: TOKEN, sshKey: key } },
      "invalid_source",
      "auth",
    ],
    ["not a key", { url: "git@example.com:o/r.git", auth: { sshKey: TOKEN } }, "invalid_source", "auth"],
    ["short webhook secret", { webhookSecret: "short" }, "invalid_source", "webhook_secret"],
  ];
  for (const [what, o, reason, field] of cases) {
    const e = await errorOf(rpc.createSource(req(o), as));
    t.equal(e.reason, reason, what);
    t.equal(e.details.field, field, `${what}: field`);
    t.notMatch(e.message, /pw-in-url|tok-5ecr3t/, `${what}: the message does not repeat a credential`);
  }
  t.equal(await sourceRows(), 0, "nothing stored");
  t.equal((await s.events("source.created")).length, 0, "nothing announced");
});

let created: Awaited<ReturnType<typeof rpc.createSource>>;

t.test("create seals the token and a generated webhook secret; the scheduler syncs at once", async (t) => {
  created = await rpc.createSource(req({ auth: { token: TOKEN }, intervalS: 3600 }), as);
  t.match(created.source, {
    name: "fleet",
    branch: "main",
    path: "",
    intervalS: 3600,
    auth: "token",
    createdBy: ADMIN.id,
  });
  t.match(created.webhookSecret, /^[A-Za-z0-9_-]{43}$/, "32 random bytes, base64url");
  t.notMatch(JSON.stringify(created.source), TOKEN);

  const x = await synced(c1);
  t.equal(x.moduleCount, 1);
  t.equal(x.assignmentCount, 1);
  t.ok(x.nextSyncAt >= x.syncedAt + 3_600_000, "next sync one interval later");
  t.match(await rpc.getModule({ name: "web" }, as), { source: "fleet", commit: c1 });

  t.equal(await reasonOf(rpc.createSource(req({}), as)), "source_exists");
  t.equal(await sourceRows(), 1);

  const [ev] = await s.events("source.created");
  t.match(ev?.metadata, { url: server.url("fleet"), branch: "main", interval_s: 3600, auth: "token" });
  t.match(ev?.actor, { id: ADMIN.id });
  const everything = [
    JSON.stringify(await s.events("source.created")),
    JSON.stringify(await s.events("source.synced")),
    JSON.stringify(await rpc.listSources({}, as)),
    await s.dumpStateSchema(),
  ].join("\n");
  t.notMatch(everything, TOKEN, "the token is nowhere in clear");
  t.notMatch(everything, created.webhookSecret, "the webhook secret is nowhere in clear");
});

t.test("list pages by name; get answers source_not_found for an unknown name", async (t) => {
  await repo.branch("other");
  await repo.checkout("main");
  await rpc.createSource(
    req({ name: "alpha", branch: "other", auth: { token: TOKEN }, webhookSecret: HOOK_SECRET }),
    as,
  );
  const p1 = await rpc.listSources({ limit: 1 }, as);
  t.same(
    p1.sources.map((x) => x.name),
    ["alpha"],
  );
  t.equal(p1.nextCursor, "alpha");
  const p2 = await rpc.listSources({ limit: 1, cursor: p1.nextCursor }, as);
  t.same(
    p2.sources.map((x) => x.name),
    ["fleet"],
  );
  t.equal(p2.nextCursor, "");
  t.equal(await reasonOf(rpc.listSources({ cursor: "not a cursor!" }, as)), "invalid_cursor");
  t.equal(await reasonOf(source("nope")), "source_not_found");
});

t.test("objects a source manages refuse API changes with managed_by_source", async (t) => {
  const managed = async (p: Promise<unknown>, what: string) => {
    const e = await errorOf(p);
    t.equal(e.reason, "managed_by_source", what);
    t.same(e.details, { source: "fleet", commit: c1 }, `${what}: details`);
    t.match(e.message, `git source 'fleet' (commit ${c1.slice(0, 7)})`);
  };
  const before = await rpc.getModule({ name: "web" }, as);
  await managed(rpc.uploadModule({ name: "web", content: moduleYaml("web", "hand-edit") }, as), "upload over");
  await managed(rpc.deleteModule({ name: "web" }, as), "module delete");
  await managed(rpc.updateAssignment({ name: "web", selector: "role=db", modules: ["web"] }, as), "assignment update");
  await managed(rpc.deleteAssignment({ name: "web" }, as), "assignment delete");
  t.equal(
    await reasonOf(rpc.createAssignment({ name: "web", selector: "role=db", modules: ["web"] }, as)),
    "assignment_exists",
    "a create of a taken name stays assignment_exists",
  );
  const after = await rpc.getModule({ name: "web" }, as);
  t.equal(after.sha256, before.sha256, "the module is unchanged");
  t.match(await rpc.getAssignment({ name: "web" }, as), { selector: "role=web", source: "fleet" });

  const http = await s.api("DELETE", "/modules/web");
  t.equal(http.status, 409, "the gateway answers 409");
  t.equal(http.body?.code, "managed_by_source");

  // Unmanaged objects are untouched by the rule, and may use managed modules.
  t.equal(await reasonOf(rpc.uploadModule({ name: "own", content: moduleYaml("own", "x") }, as)), "ok");
  t.equal(await reasonOf(rpc.createAssignment({ name: "mine", selector: "role=db", modules: ["web"] }, as)), "ok");
  t.equal(
    await reasonOf(rpc.updateAssignment({ name: "mine", selector: "role=x", modules: ["web", "own"] }, as)),
    "ok",
  );
  t.equal(await reasonOf(rpc.deleteAssignment({ name: "mine" }, as)), "ok");
  t.equal(await reasonOf(rpc.deleteModule({ name: "own" }, as)), "ok");
});

t.test("a module the API made and a sync then took over is refused too", async (t) => {
  // A source's row set directly: the rule reads the columns, whoever wrote them.
  await rpc.uploadModule({ name: "taken", content: moduleYaml("taken", "x") }, as);
  await s.state.deps.pool.query("UPDATE modules SET source = 'alpha', source_commit = $1 WHERE name = 'taken'", [c1]);
  t.equal(
    await reasonOf(rpc.uploadModule({ name: "taken", content: moduleYaml("taken", "y") }, as)),
    "managed_by_source",
  );
  await s.state.deps.pool.query("UPDATE modules SET source = NULL, source_commit = '' WHERE name = 'taken'");
  t.equal(await reasonOf(rpc.deleteModule({ name: "taken" }, as)), "ok");
});

t.test("SyncSource fetches now and returns the source at the new commit", async (t) => {
  await repo.write("modules/web.yaml", moduleYaml("web", "v2"));
  const c2 = await repo.commit("web v2");
  const x = await rpc.syncSource({ name: "fleet" }, as);
  t.equal(x.commit, c2, "a scheduler tick holding the lock only delays the answer");
  t.match((await rpc.getModule({ name: "web" }, as)).content, /'v2'/);
  t.equal(await reasonOf(rpc.syncSource({ name: "nope" }, as)), "source_not_found");
});

t.test("SyncSource behind a sync already under way answers with a sync that started after it", async (t) => {
  await repo.write("modules/web.yaml", moduleYaml("web", "v3"));
  const c3 = await repo.commit("web v3");
  // Another replica (or a scheduled retry that fetched before this commit) holds the source's lock.
  let release!: () => void;
  const held = new Promise<void>((r) => (release = r));
  let locked!: () => void;
  const isLocked = new Promise<void>((r) => (locked = r));
  const holder = withJobLock(s.state.deps.pool, "source:fleet", async () => {
    locked();
    await held;
  });
  await isLocked;
  const answer = rpc.syncSource({ name: "fleet" }, as);
  setTimeout(release, 1500);
  t.equal(await holder, true);
  const x = await answer;
  t.equal(x.commit, c3, "not the state the running sync left");
  t.equal(x.status, "ok");
});

const fixture = (name: string, patch: Record<string, unknown> = {}) =>
  new Uint8Array(
    Buffer.from(
      JSON.stringify({
        ...JSON.parse(readFileSync(new URL(`fixtures/webhooks/${name}.json`, import.meta.url), "utf8")),
        ...patch,
      }),
    ),
  );
const hmac = (body: Uint8Array, secret: string) => createHmac("sha256", secret).update(body).digest("hex");
const signed = {
  github: (body: Uint8Array, secret: string, event = "push") => ({
    "content-type": "application/json",
    "x-github-event": event,
    "x-hub-signature-256": `sha256=${hmac(body, secret)}`,
  }),
  gitea: (body: Uint8Array, secret: string) => ({
    "content-type": "application/json",
    "x-gitea-event": "push",
    "x-github-event": "push",
    "x-gitea-signature": hmac(body, secret),
  }),
  gitlab: (_body: Uint8Array, secret: string) => ({
    "content-type": "application/json",
    "x-gitlab-event": "Push Hook",
    "x-gitlab-token": secret,
  }),
};
const webhook = (name: string, headers: Record<string, string>, body: Uint8Array) =>
  rpc.sourceWebhook({ name, headers, body }, { actor: { id: "", name: "", type: "system", role: "" } });

for (const forge of ["github", "gitlab", "gitea"] as const) {
  t.test(`a signed ${forge} push of the branch syncs it; a wrong signature syncs nothing`, async (t) => {
    const before = await settled();
    await repo.write("modules/web.yaml", moduleYaml("web", forge));
    const head = await repo.commit(`web for ${forge}`);
    const body = fixture(`${forge}-push`, { ref: "refs/heads/main", after: head });

    const bad = await errorOf(webhook("fleet", signed[forge](body, "not-the-secret-0123456789"), body));
    t.equal(bad.reason, "webhook_signature_invalid");
    t.equal(bad.httpStatus, 401);
    const still = await source();
    t.same([still.commit, still.attemptedAt], [before.commit, before.attemptedAt], "no sync was attempted");

    const r = await webhook("fleet", signed[forge](body, created.webhookSecret), body);
    t.match(r, { forge, event: "push", synced: true, reason: WEBHOOK_QUEUED, commit: head });
    // The answer does not wait for the sync.
    await synced(head);
    t.match((await rpc.getModule({ name: "web" }, as)).content, `'${forge}'`);
    const hooked = (await s.events("source.synced")).find((e) => e.metadata?.commit === head);
    t.match(hooked?.metadata?.trigger, { kind: "webhook", actor_id: `webhook:${forge}` });
  });
}

t.test("verified notifications that are not a push of the branch sync nothing", async (t) => {
  const before = await settled();
  const other = fixture("github-push", { ref: "refs/heads/feature", after: "a".repeat(40) });
  t.match(await webhook("fleet", signed.github(other, created.webhookSecret), other), {
    synced: false,
    reason: "push to branch 'feature'; the source follows 'main'",
  });
  const tag = fixture("github-push", { ref: "refs/tags/v1", after: "a".repeat(40) });
  t.match(await webhook("fleet", signed.github(tag, created.webhookSecret), tag), {
    synced: false,
    reason: /tag|branch/,
  });
  const deleted = fixture("github-push", { ref: "refs/heads/main", after: "0".repeat(40), deleted: true });
  t.match(await webhook("fleet", signed.github(deleted, created.webhookSecret), deleted), {
    synced: false,
    reason: "branch 'main' was deleted",
  });
  const ping = fixture("github-ping");
  t.match(await webhook("fleet", signed.github(ping, created.webhookSecret, "ping"), ping), {
    forge: "github",
    event: "ping",
    synced: false,
  });
  t.equal((await source()).attemptedAt, before.attemptedAt, "no sync was attempted");

  // alpha has a secret of its own: fleet's does not open it.
  const mine = fixture("github-push", { ref: "refs/heads/other", after: "a".repeat(40) });
  t.equal(
    await reasonOf(webhook("alpha", signed.github(mine, created.webhookSecret), mine)),
    "webhook_signature_invalid",
  );
  t.equal(await reasonOf(webhook("alpha", { "x-nothing": "1" }, mine)), "invalid_webhook");
  t.equal(
    await reasonOf(webhook("nope", signed.github(mine, HOOK_SECRET), mine)),
    "webhook_signature_invalid",
    "an unknown source: like a bad signature",
  );
});

t.test("a webhook answers while its sync is still fetching from a stalled server", async (t) => {
  // Refuses at first (so the scheduler's first sync fails fast and backs off), then holds every
  // connection open without a word: the webhook's own fetch hangs until the test lets it go.
  const held: Socket[] = [];
  let stall = false;
  const stalled = createServer((c) => (stall ? held.push(c) : c.destroy()));
  await new Promise<void>((r) => stalled.listen(0, "127.0.0.1", r));
  const release = () => {
    for (const c of held) c.destroy();
    stalled.close();
  };
  t.teardown(release);
  const { port } = stalled.address() as AddressInfo;
  const stalledSecret = "stalled-hook-secret-0123456789";
  await rpc.createSource(
    req({ name: "stalled", url: `http://127.0.0.1:${port}/stalled.git`, webhookSecret: stalledSecret }),
    as,
  );
  const first = await eventually(async () => {
    const x = await source("stalled");
    return x.status === "error" ? x : undefined;
  }, 20_000);

  stall = true;
  const body = fixture("github-push", { ref: "refs/heads/main", after: "b".repeat(40) });
  const r = await webhook("stalled", signed.github(body, stalledSecret), body);
  t.match(r, { synced: true, reason: WEBHOOK_QUEUED });
  await eventually(async () => held.length > 0 || undefined, 10_000);
  t.equal((await source("stalled")).attemptedAt, first.attemptedAt, "answered before the fetch ended");

  release();
  const after = await eventually(async () => {
    const x = await source("stalled");
    return x.attemptedAt > first.attemptedAt ? x : undefined;
  }, 20_000);
  t.equal(after.status, "error", "the fetch's failure is recorded on the source");
  await rpc.deleteSource({ name: "stalled" }, as);
});

t.test("plan checks its ref and wait before fetching", async (t) => {
  t.equal(await reasonOf(rpc.planSource({ name: "fleet", ref: "a..b" }, as)), "invalid_ref");
  t.equal(await reasonOf(rpc.planSource({ name: "fleet", ref: "", waitSeconds: 301 }, as)), "invalid_request");
  t.equal(await reasonOf(rpc.planSource({ name: "nope", ref: "" }, as)), "source_not_found");
  t.equal(
    await reasonOf(rpc.planSource({ name: "fleet", ref: "no-such-branch", waitSeconds: 0 }, as)),
    "source_ref_not_found",
  );
  const plan = await rpc.planSource({ name: "fleet", ref: "", waitSeconds: 0 }, as);
  t.equal(plan.commit, (await source()).commit, "the default ref is the source's branch");
  t.same(plan.errors, []);
});

t.test("delete releases what the source managed and announces it", async (t) => {
  const head = (await source()).commit;
  await rpc.deleteSource({ name: "fleet" }, as);
  t.equal(await reasonOf(source()), "source_not_found");
  t.equal(await reasonOf(rpc.deleteSource({ name: "fleet" }, as)), "source_not_found");
  t.match(await rpc.getModule({ name: "web" }, as), { source: "", commit: "" });
  t.match(await rpc.getAssignment({ name: "web" }, as), { source: "", commit: "" });
  t.equal(await reasonOf(rpc.uploadModule({ name: "web", content: moduleYaml("web", "by hand") }, as)), "ok");
  const ev = (await s.events("source.deleted")).find((e) => e.target?.name === "fleet");
  t.match(ev?.metadata, { commit: head, released_modules: 1, released_assignments: 1 });
  t.match(ev?.actor, { id: ADMIN.id });
  t.notMatch(JSON.stringify(ev), TOKEN);
});

t.test("without state.source_keys a source cannot be created", async (t) => {
  await s.restartState({ source_keys: "" });
  t.equal(await reasonOf(rpc.createSource(req({ name: "later" }), as)), "source_keys_unset");
  t.equal(await reasonOf(source("later")), "source_not_found", "nothing stored");
});
