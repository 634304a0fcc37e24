import t from "tap";
import {
  chmodSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createHash } from "node:crypto";
import { join } from "node:path";
import { byId, scratch, stateHarness, type Res } from "./state-harness.js";

const h = await stateHarness();

/** A module like the ones the state service renders: a dir, a file in it, a symlink to the file. */
const moduleUnder = (dir: string, content = "managed line 1\nmanaged line 2\n"): Res[] => [
  {
    id: "conf",
    type: "file",
    spec: { path: join(dir, "app", "app.conf"), content, mode: "0640", owner: "root", group: "root" },
    requires: ["m/appdir"],
  },
  { id: "appdir", type: "directory", spec: { path: join(dir, "app"), mode: "0750" } },
  {
    id: "current",
    type: "symlink",
    spec: { path: join(dir, "current"), target: join(dir, "app", "app.conf") },
    requires: ["m/conf"],
  },
];

t.test(
  "plan shows a unified diff and changes nothing; apply creates; second apply and plan: nothing to change",
  async (t) => {
    const dir = scratch(t);
    const mod = moduleUnder(dir);

    const plan = await h.execute("plan", mod);
    t.same(
      plan.map((r) => r.id),
      ["appdir", "conf", "current"],
      "ordered by requires",
    );
    t.ok(
      plan.every((r) => r.status === "changed" && r.changed),
      "everything would change",
    );
    const conf = byId(plan).conf!;
    t.match(conf.diff, /^--- \/dev\/null/m);
    t.match(conf.diff, new RegExp(`^\\+\\+\\+ ${join(dir, "app", "app.conf")}`, "m"));
    t.match(conf.diff, /^\+managed line 1$/m);
    t.match(conf.diff, /mode 0640/);
    t.match(byId(plan).appdir!.diff, /create directory \(mode 0750\)/);
    t.same(readdirSync(dir), [], "plan changed nothing on disk");

    const apply = await h.execute("apply", mod);
    t.same(
      apply.map((r) => [r.id, r.status]),
      [
        ["appdir", "changed"],
        ["conf", "changed"],
        ["current", "changed"],
      ],
    );
    t.equal(readFileSync(join(dir, "app", "app.conf"), "utf8"), "managed line 1\nmanaged line 2\n");
    t.equal(statSync(join(dir, "app", "app.conf")).mode & 0o7777, 0o640);
    t.equal(statSync(join(dir, "app")).mode & 0o7777, 0o750);
    t.equal(readlinkSync(join(dir, "current")), join(dir, "app", "app.conf"));
    t.same(readdirSync(join(dir, "app")), ["app.conf"], "no temp file left behind by the atomic write");
    const obs = byId(apply).conf!.observed!;
    t.same(obs, {
      exists: true,
      sha256: createHash("sha256").update("managed line 1\nmanaged line 2\n").digest("hex"),
      size: 30,
      mode: "0640",
      owner: "root",
      group: "root",
    });
    t.ok(apply.every((r) => typeof r.durationMs === "number" && r.durationMs >= 0));

    const again = await h.execute("apply", mod);
    t.same(
      again.map((r) => [r.status, r.changed, r.diff]),
      [
        ["ok", false, ""],
        ["ok", false, ""],
        ["ok", false, ""],
      ],
      "second apply: zero changes",
    );
    const replan = await h.execute("plan", mod);
    t.ok(
      replan.every((r) => r.status === "ok" && !r.changed),
      "second plan: nothing to change",
    );
  },
);

t.test(
  "a hand-edited managed file: plan reports exactly that resource, with the diff; apply restores it",
  async (t) => {
    const dir = scratch(t);
    const mod = moduleUnder(dir);
    await h.execute("apply", mod);
    writeFileSync(join(dir, "app", "app.conf"), "managed line 1\nedited by hand\n");

    const plan = await h.execute("plan", mod);
    t.same(
      plan.filter((r) => r.changed).map((r) => r.id),
      ["conf"],
    );
    const diff = byId(plan).conf!.diff;
    t.match(diff, /^-edited by hand$/m);
    t.match(diff, /^\+managed line 2$/m);
    t.notMatch(diff, /^[-+]managed line 1$/m, "unchanged lines are context only");
    t.equal(
      readFileSync(join(dir, "app", "app.conf"), "utf8"),
      "managed line 1\nedited by hand\n",
      "plan did not repair it",
    );

    chmodSync(join(dir, "app", "app.conf"), 0o666);
    const attrs = byId(await h.execute("plan", mod)).conf!.diff;
    t.match(attrs, /mode 0666 -> 0640/);

    const fix = await h.execute("apply", mod);
    t.same(
      fix.filter((r) => r.changed).map((r) => r.id),
      ["conf"],
    );
    t.equal(readFileSync(join(dir, "app", "app.conf"), "utf8"), "managed line 1\nmanaged line 2\n");
    t.equal(statSync(join(dir, "app", "app.conf")).mode & 0o7777, 0o640);
  },
);

t.test("mode-only drift is repaired in place without rewriting the content", async (t) => {
  const dir = scratch(t);
  const file: Res = { id: "f", type: "file", spec: { path: join(dir, "f"), content: "x\n", mode: "0600" } };
  await h.execute("apply", [file]);
  const ino = statSync(join(dir, "f")).ino;
  chmodSync(join(dir, "f"), 0o644);
  const r = byId(await h.execute("apply", [file])).f!;
  t.equal(r.status, "changed");
  t.equal(r.message, "attributes updated");
  t.equal(statSync(join(dir, "f")).ino, ino, "same inode: chmod, not a rewrite");
  t.equal(statSync(join(dir, "f")).mode & 0o7777, 0o600);
});

t.test("state absent removes files, symlinks and directories; plan shows the removal first", async (t) => {
  const dir = scratch(t);
  writeFileSync(join(dir, "old"), "bye\n");
  symlinkSync("/etc/hostname", join(dir, "lnk"));
  mkdirSync(join(dir, "d"));
  mkdirSync(join(dir, "full"));
  writeFileSync(join(dir, "full", "x"), "");
  const mod: Res[] = [
    { id: "old", type: "file", spec: { path: join(dir, "old"), state: "absent" } },
    { id: "lnk", type: "symlink", spec: { path: join(dir, "lnk"), state: "absent" } },
    { id: "d", type: "directory", spec: { path: join(dir, "d"), state: "absent" } },
    { id: "full", type: "directory", spec: { path: join(dir, "full"), state: "absent" } },
  ];
  const plan = byId(await h.execute("plan", mod));
  t.match(plan.old!.diff, /^-bye$/m);
  t.match(plan.old!.diff, /\+\+\+ \/dev\/null/);
  t.equal(plan.lnk!.status, "changed");
  t.equal(plan.full!.status, "failed", "a non-empty directory is not removed without force");
  t.match(plan.full!.message, /force: true/);
  t.ok(existsSync(join(dir, "old")) && existsSync(join(dir, "d")), "plan removed nothing");

  const apply = byId(
    await h.execute("apply", [
      ...mod.slice(0, 3),
      { id: "full", type: "directory", spec: { path: join(dir, "full"), state: "absent", force: true } },
    ]),
  );
  t.same(
    [apply.old!.status, apply.lnk!.status, apply.d!.status, apply.full!.status],
    ["changed", "changed", "changed", "changed"],
  );
  t.same(readdirSync(dir), []);
  t.ok(
    (await h.execute("apply", mod)).every((r) => r.status === "ok"),
    "absent twice: no change",
  );
});

t.test("symlink retarget; a path that is not a symlink is never replaced", async (t) => {
  const dir = scratch(t);
  symlinkSync("/one", join(dir, "l"));
  writeFileSync(join(dir, "plain"), "keep");
  const r = byId(
    await h.execute("apply", [
      { id: "l", type: "symlink", spec: { path: join(dir, "l"), target: "/two" } },
      { id: "plain", type: "symlink", spec: { path: join(dir, "plain"), target: "/two" } },
    ]),
  );
  t.equal(r.l!.status, "changed");
  t.match(r.l!.diff, /\/one -> \/two/);
  t.equal(readlinkSync(join(dir, "l")), "/two");
  t.equal(r.plain!.status, "failed");
  t.match(r.plain!.message, /not a symlink/);
  t.equal(readFileSync(join(dir, "plain"), "utf8"), "keep");
});

t.test("directory recurse fixes ownership below the path", async (t) => {
  const dir = scratch(t);
  mkdirSync(join(dir, "tree", "sub"), { recursive: true });
  writeFileSync(join(dir, "tree", "sub", "f"), "");
  const { chownSync } = await import("node:fs");
  chownSync(join(dir, "tree", "sub", "f"), 65534, 65534);
  const res: Res = {
    id: "tree",
    type: "directory",
    spec: { path: join(dir, "tree"), owner: "root", group: "root", recurse: true },
  };
  const plan = byId(await h.execute("plan", [res])).tree!;
  t.match(plan.diff, /owner\/group of 1 entries below -> root:root/);
  t.equal(lstatSync(join(dir, "tree", "sub", "f")).uid, 65534, "plan changed nothing");
  t.equal(byId(await h.execute("apply", [res])).tree!.status, "changed");
  t.equal(lstatSync(join(dir, "tree", "sub", "f")).uid, 0);
  t.equal(byId(await h.execute("apply", [res])).tree!.status, "ok");
});

t.test(
  "a file with a secret in its content is sealed in plan and apply diffs (sizes only), but written to disk",
  async (t) => {
    const dir = scratch(t);
    const secret = "s3cr3t-Value-42";
    const res: Res = {
      id: "cred",
      type: "file",
      spec: { path: join(dir, "cred"), content: `user=app\npassword=${secret}\n`, mode: "0600" },
    };
    const plan = byId(await h.execute("plan", [res], { mask: [secret] })).cred!;
    t.notMatch(JSON.stringify(plan), secret);
    t.match(plan.diff, /^content \(none\) -> 34 bytes \(not shown: the file holds content rendered from a secret\)$/m);
    t.notMatch(plan.diff, /user=app/, "not even its other lines");
    const apply = byId(await h.execute("apply", [res], { mask: [secret] })).cred!;
    t.notMatch(JSON.stringify(apply), secret);
    t.equal(readFileSync(join(dir, "cred"), "utf8"), `user=app\npassword=${secret}\n`);
  },
);

t.test("malformed specs fail that resource with a clear message and skip its dependents only", async (t) => {
  const dir = scratch(t);
  const r = byId(
    await h.execute("apply", [
      { id: "rel", type: "file", spec: { path: "relative/path", content: "x" } },
      { id: "nopath", type: "file", spec: { content: "x" } },
      { id: "typo", type: "file", spec: { path: join(dir, "t"), conent: "x" } },
      { id: "dep", type: "file", spec: { path: join(dir, "dep"), content: "x" }, requires: ["m/rel"] },
      { id: "noparent", type: "file", spec: { path: join(dir, "missing", "f"), content: "x" } },
      { id: "fine", type: "file", spec: { path: join(dir, "fine"), content: "x" } },
      { id: "weird", type: "teleport", spec: {} },
    ]),
  );
  t.equal(r.rel!.status, "failed");
  t.match(r.rel!.message, /"path" must be an absolute path/);
  t.match(r.nopath!.message, /"path" is required/);
  t.match(r.typo!.message, /unknown field "conent"/);
  t.equal(r.dep!.status, "skipped");
  t.match(r.noparent!.message, /parent directory .* does not exist/);
  t.equal(r.fine!.status, "changed");
  t.equal(r.weird!.status, "unsupported");
  t.match(r.weird!.message, /"teleport" is not supported/);
  t.same(readdirSync(dir).sort(), ["fine"]);
});

t.test("a directory with missing parents: parents 0755, the leaf its own mode", async (t) => {
  const dir = scratch(t);
  const res: Res = { id: "deep", type: "directory", spec: { path: join(dir, "a", "b", "private"), mode: "0700" } };
  t.equal(byId(await h.execute("apply", [res])).deep!.status, "changed");
  t.equal(statSync(join(dir, "a", "b", "private")).mode & 0o7777, 0o700);
  t.equal(statSync(join(dir, "a")).mode & 0o777, 0o755 & ~process.umask());
  t.equal(byId(await h.execute("apply", [res])).deep!.status, "ok");
});
