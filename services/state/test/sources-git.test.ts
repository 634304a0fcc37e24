import { existsSync, mkdtempSync, readdirSync, rmSync, statSync } from "node:fs";
import { createServer, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { SOURCE_MAX_FILES } from "@orch/contracts";
import {
  createTestRepo,
  eventually,
  freePort,
  memoryLogger,
  silentLogger,
  startGitHttpServer,
} from "@orch/kit/testing";
import { MODULE_MAX_BYTES } from "../src/module/parse.js";
import { GitError, openGitRepo, scrubGitMessage } from "../src/sources/git.js";

// The git wrapper against real git over git's real smart-HTTP server (http-backend CGI).
const root = mkdtempSync(join(tmpdir(), "orch-git-root-"));
const cache = mkdtempSync(join(tmpdir(), "orch-git-cache-"));
t.teardown(() => {
  rmSync(root, { recursive: true, force: true });
  rmSync(cache, { recursive: true, force: true });
});

const TOKEN = "tok-3f9a1c7e5b2d48e0a6c1";
const open = (name: string, url: string, extra: Partial<Parameters<typeof openGitRepo>[0]> = {}) =>
  openGitRepo({ cacheDir: cache, name, url, timeoutMs: 20_000, log: silentLogger(), ...extra });

async function failure(p: Promise<unknown>): Promise<GitError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof GitError) return err;
    throw err;
  }
  throw new Error("expected a GitError");
}

t.test("git over http", async (t) => {
  const repo = await createTestRepo(join(root, "fleet"));
  await repo.write("modules/web.yaml", "name: web\n");
  await repo.write("modules/db.yml", "name: db\n");
  await repo.write("modules/README.md", "not a module\n");
  await repo.write("modules/nested/deep.yaml", "not a direct child\n");
  await repo.write("assignments/all.yaml", "selector: '*'\n");
  await repo.write("other/stray.yaml", "outside the layout\n");
  await repo.write("infra/modules/edge.yaml", "name: edge\n");
  const first = await repo.commit("first");
  await repo.write("modules/web.yaml", "name: web\nversion: 2\n");
  const second = await repo.commit("second");

  const server = await startGitHttpServer(root);
  t.teardown(() => server.close());

  await t.test("fetches a branch and reads its tree", async (t) => {
    const g = open("fleet", server.url("fleet"));
    t.equal(await g.fetch("main"), second, "resolves the branch head");
    t.ok(statSync(join(cache, "fleet.git", "HEAD")).isFile(), "bare cache repository <name>.git");
    const files = await g.readTree(second, "");
    t.same(
      files,
      [
        { path: "assignments/all.yaml", content: "selector: '*'\n", bytes: 14 },
        { path: "modules/db.yml", content: "name: db\n", bytes: 9 },
        { path: "modules/web.yaml", content: "name: web\nversion: 2\n", bytes: 21 },
      ],
      "direct .yaml/.yml children of modules/ and assignments/, sorted",
    );
    t.same(
      (await g.readTree(second, "infra/")).map((f) => [f.path, f.content]),
      [["modules/edge.yaml", "name: edge\n"]],
      "under the source path, paths relative to it",
    );
    t.same(await g.readTree(second, "nowhere"), [], "a missing path is an empty tree");
  });

  await t.test("fetches an older commit by SHA (protocol v2, no allowAnySHA1InWant)", async (t) => {
    const g = open("by-sha", server.url("fleet"));
    t.equal(await g.fetch(first), first);
    const web = (await g.readTree(first, "")).find((f) => f.path === "modules/web.yaml");
    t.equal(web?.content, "name: web\n", "that commit's content, not the head's");
    t.equal(await g.fetch(first.slice(0, 10)), first, "an abbreviated SHA resolves once fetched");
    const short = await failure(g.fetch("deadbeefdeadbeef"));
    t.equal(short.failure, "ref_not_found", "an abbreviated SHA never fetched");
    t.match(short.message, /full SHA/);
    const unknown = await failure(g.fetch("0123456789abcdef0123456789abcdef01234567"));
    t.equal(unknown.failure, "ref_not_found", "a full SHA the server does not have");
  });

  await t.test("a force-push is just a new head", async (t) => {
    const r = await createTestRepo(join(root, "forced"));
    await r.write("modules/a.yaml", "v: 1\n");
    await r.commit("one");
    await r.write("modules/a.yaml", "v: 2\n");
    const two = await r.commit("two");
    const g = open("forced", server.url("forced"));
    t.equal(await g.fetch("main"), two);
    await r.git("reset", "-q", "--hard", "HEAD~1");
    await r.write("modules/a.yaml", "v: rewritten\n");
    const rewritten = await r.commit("rewritten");
    t.equal(await g.fetch("main"), rewritten, "the rewritten history's head");
    t.equal((await g.readTree(rewritten, ""))[0]?.content, "v: rewritten\n");
  });

  await t.test("unknown branch → ref_not_found", async (t) => {
    const err = await failure(open("fleet", server.url("fleet")).fetch("no-such-branch"));
    t.equal(err.failure, "ref_not_found");
    t.match(err.message, /no-such-branch/, "git's own words");
  });

  await t.test("a feature branch and main, fetched at once, each resolve to their own head", async (t) => {
    await repo.branch("feature");
    await repo.write("modules/web.yaml", "name: web\nversion: 3\n");
    const feature = await repo.commit("feature");
    await repo.checkout("main");
    const g = open("fleet", server.url("fleet"));
    const [a, b, c] = await Promise.all([g.fetch("feature"), g.fetch("main"), g.fetch("feature")]);
    t.same([a, b, c], [feature, second, feature]);
  });

  await t.test("a changed URL is followed", async (t) => {
    const other = await createTestRepo(join(root, "other"));
    await other.write("modules/x.yaml", "x: 1\n");
    const head = await other.commit("other");
    const g = open("fleet", server.url("other"));
    t.equal(await g.fetch("main"), head);
    t.equal((await g.readTree(head, ""))[0]?.path, "modules/x.yaml");
  });

  await t.test("large files are listed but not read; the list is capped", async (t) => {
    const big = await createTestRepo(join(root, "big"));
    for (let i = 0; i < SOURCE_MAX_FILES + 5; i++)
      await big.write(`assignments/a${String(i).padStart(4, "0")}.yaml`, `n: ${i}\n`);
    const head = await big.commit("many");
    const g = open("big", server.url("big"));
    await g.fetch("main");
    const files = await g.readTree(head, "");
    t.equal(files.length, SOURCE_MAX_FILES + 1, "SOURCE_MAX_FILES + 1, so the caller can report too many");
    t.equal(files[0]?.content, "n: 0\n", "contents of the read ones");
    const only = await createTestRepo(join(root, "big2"));
    await only.write("modules/huge.yaml", "x".repeat(MODULE_MAX_BYTES + 1));
    await only.write("modules/ok.yaml", "ok: 1\n");
    const h2 = await only.commit("huge");
    const g2 = open("big2", server.url("big2"));
    await g2.fetch("main");
    t.same(await g2.readTree(h2, ""), [
      { path: "modules/huge.yaml", content: "", bytes: MODULE_MAX_BYTES + 1 },
      { path: "modules/ok.yaml", content: "ok: 1\n", bytes: 6 },
    ]);
  });
});

t.test("token auth", async (t) => {
  const repo = await createTestRepo(join(root, "private"));
  await repo.write("modules/a.yaml", "a: 1\n");
  const head = await repo.commit("one");
  const server = await startGitHttpServer(root, { token: TOKEN });
  t.teardown(() => server.close());
  const basic = (tok: string) => Buffer.from(`x-access-token:${tok}`).toString("base64");

  const { log, lines } = memoryLogger();
  t.equal(
    await open("private", server.url("private"), { auth: { token: TOKEN }, log }).fetch("main"),
    head,
    "the right token",
  );

  const wrong = "wrong-token-7d1e2f3a9b";
  const err = await failure(open("private", server.url("private"), { auth: { token: wrong }, log }).fetch("main"));
  t.equal(err.failure, "auth_failed");
  for (const secret of [wrong, basic(wrong), TOKEN, basic(TOKEN)]) {
    t.notOk(err.message.includes(secret), "the message holds no credential");
    t.notOk(lines.join("").includes(secret), "nor does any log line");
  }
  t.ok(
    lines.some((l) => l.includes("auth_failed")),
    "the failure is logged (without the token)",
  );

  const none = await failure(open("private-anon", server.url("private")).fetch("main"));
  t.equal(none.failure, "auth_failed", "no credentials at all");
});

t.test("nothing listening → unreachable", async (t) => {
  const port = await freePort();
  const err = await failure(open("gone", `http://127.0.0.1:${port}/repo`).fetch("main"));
  t.equal(err.failure, "unreachable");
  t.match(err.message, /127\.0\.0\.1/, "git's message says where");
});

t.test("a server that never answers → timeout, and the transport is killed", async (t) => {
  const sockets: Socket[] = [];
  let closed = 0;
  const hole = createServer((s) => {
    sockets.push(s);
    s.on("close", () => closed++);
    s.on("error", () => {});
    s.resume(); // read (and drop) the request, so the peer's close is seen
  });
  await new Promise<void>((r) => hole.listen(0, "127.0.0.1", r));
  t.teardown(() => {
    for (const s of sockets) s.destroy();
    hole.close();
  });
  const port = (hole.address() as { port: number }).port;
  // Without the limit this fetch would never end (the server never answers): that it ended, as a
  // timeout, proves the limit stopped it.
  const err = await failure(open("hole", `http://127.0.0.1:${port}/repo`, { timeoutMs: 800 }).fetch("main"));
  t.equal(err.failure, "timeout");
  t.match(err.message, /time limit/, "stopped by the time limit");
  t.ok(sockets.length > 0, "git did connect");
  await eventually(() => closed === sockets.length, 2000).catch(() => undefined);
  t.equal(
    closed,
    sockets.length,
    `the connection was dropped: git-remote-http died with git (${closed}/${sockets.length})`,
  );
});

t.test("ssh: the key file lives only for the call and never leaks", async (t) => {
  const key =
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n-----END OPENSSH PRIVATE KEY-----";
  const leftovers = () => readdirSync(tmpdir()).filter((f) => f.startsWith("orch-ssh-")).length;
  const before = leftovers();
  const port = await freePort();
  const err = await failure(
    open("ssh", `ssh://git@127.0.0.1:${port}/repo.git`, { auth: { sshKey: key } }).fetch("main"),
  );
  t.equal(err.failure, "unreachable", "connection refused");
  t.notOk(err.message.includes("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"), "no key material in the message");
  t.equal(leftovers(), before, "the temporary key directory is removed");
  t.notOk(existsSync(join(cache, "ssh.git", "id")), "and nothing was written into the cache repository");
});

t.test("messages drop URL userinfo and credentials", async (t) => {
  t.equal(
    scrubGitMessage("remote: x\nfatal: unable to access 'https://bob:hunter2@example.com/r.git/': 403\nhint: y\n", [
      "hunter2",
    ]),
    "fatal: unable to access 'https://example.com/r.git/': 403",
  );
  t.equal(scrubGitMessage("error: token abc123secret rejected", ["abc123secret"]), "error: token [redacted] rejected");
});
