import t from "tap";
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { STATE_FEATURES_ATTRIBUTE } from "@orch/contracts";
import { BlobCache } from "../src/blobs/cache.js";
import { MAX_WRITE_BYTES } from "../src/blobs/chunk-rules.js";
import { scratch, stateHarness } from "./state-harness.js";

// `archive` resources through the served Execute handler: real archives made by the system tar
// and zip (python3 for a malicious one), put into the agent's real blob cache, extracted onto the
// real filesystem.

const dataDir = scratch(t, "orch-agent-data-");
const h = await stateHarness(dataDir);
const cache = new BlobCache(dataDir);
const sh = (cmd: string, args: string[], cwd?: string) => execFileSync(cmd, args, { cwd, stdio: "pipe" });

const digestOf = (b: Uint8Array) => `sha256:${createHash("sha256").update(b).digest("hex")}`;

/** Puts an archive file into the cache the way the link does; returns its digest. */
async function cacheBlob(file: string): Promise<string> {
  const blob = readFileSync(file);
  const digest = digestOf(blob);
  for (let offset = 0; offset < blob.length; offset += MAX_WRITE_BYTES)
    await cache.write({ digest, size: blob.length, offset, data: blob.subarray(offset, offset + MAX_WRITE_BYTES) });
  return digest;
}

async function run(mode: "plan" | "apply", spec: Record<string, string | boolean>) {
  const [r] = await h.execute(mode, [{ id: "app", type: "archive", spec }]);
  if (!r) throw new Error("no result");
  return r;
}

/** Every path under `dir`, "d " / "f <content>" / "l <target>", sorted (symlinks not followed). */
function listing(dir: string): string[] {
  const out: string[] = [];
  const walk = (rel: string) => {
    for (const name of readdirSync(join(dir, rel)).sort()) {
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(join(dir, r));
      if (st.isSymbolicLink()) out.push(`${r} -> ${readlinkSync(join(dir, r))}`);
      else if (st.isDirectory()) {
        out.push(`${r}/`);
        walk(r);
      } else out.push(`${r}: ${readFileSync(join(dir, r), "utf8")}`);
    }
  };
  walk("");
  return out;
}

/** A source tree: conf/app.conf, bin/run (0755), a link, an empty directory. */
function tree(dir: string, version: string): string {
  const src = join(dir, `src-${version}`);
  mkdirSync(join(src, "conf"), { recursive: true });
  mkdirSync(join(src, "bin"));
  mkdirSync(join(src, "logs"));
  writeFileSync(join(src, "conf/app.conf"), `version=${version}\n`);
  writeFileSync(join(src, "bin/run"), "#!/bin/sh\necho run\n", { mode: 0o755 });
  symlinkSync("conf/app.conf", join(src, "app.conf"));
  return src;
}

const V1 = [
  "app.conf -> conf/app.conf",
  "bin/",
  "bin/run: #!/bin/sh\necho run\n",
  "conf/",
  "conf/app.conf: version=1\n",
  "logs/",
];

t.test("the agent says it has the archive type: state_features lists archive", async (t) => {
  t.ok(h.attributes.get(STATE_FEATURES_ATTRIBUTE)?.split(",").includes("archive"));
});

t.test("a tar.gz: plan, apply extracts it, a second apply changes nothing", async (t) => {
  const dir = scratch(t);
  const src = tree(dir, "1");
  const tgz = join(dir, "app.tgz");
  sh("tar", ["czf", tgz, "-C", src, "."]);
  const digest = digestOf(readFileSync(tgz));
  const dest = join(dir, "opt/app");
  const spec = { path: dest, source: digest };

  const early = await run("plan", spec);
  t.equal(early.status, "changed", early.message);
  t.equal(early.diff, `create directory (mode 0755)\narchive (none) -> ${digest}\n`, "not cached yet: no size");
  t.notOk(existsSync(dest), "plan wrote nothing");
  const uncached = await run("apply", spec);
  t.equal(uncached.status, "failed");
  t.match(uncached.message, /is not in this agent's cache/);

  await cacheBlob(tgz);
  const apply = await run("apply", spec);
  t.equal(apply.status, "changed", apply.message);
  t.equal(apply.message, "extracted 6 entries");
  t.same(listing(dest), V1);
  t.equal(lstatSync(join(dest, "bin/run")).mode & 0o777, 0o755, "modes from the archive");
  t.equal(lstatSync(join(dest, "conf/app.conf")).mode & 0o777, 0o644);
  t.equal(lstatSync(dest).mode & 0o777, 0o755, "a new destination is 0755");
  t.same(readdirSync(join(dataDir, "archives")).length, 1, "recorded in the data directory");
  t.match(apply.observed, { exists: true, digest, entries: 6, mode: "0755" });

  const again = await run("plan", spec);
  t.equal(again.status, "ok", again.diff);
  t.equal(again.diff, "");
  const reapply = await run("apply", spec);
  t.equal(reapply.status, "ok");
  t.equal(reapply.changed, false);
});

t.test("drift: a deleted or changed file is found and restored; a new digest extracts again", async (t) => {
  const dir = scratch(t);
  const tgz = join(dir, "app.tgz");
  sh("tar", ["czf", tgz, "-C", tree(dir, "1"), "."]);
  const v1 = await cacheBlob(tgz);
  const dest = join(dir, "app");
  mkdirSync(dest);
  t.equal((await run("apply", { path: dest, source: v1 })).status, "changed");

  rmSync(join(dest, "conf/app.conf"));
  writeFileSync(join(dest, "bin/run"), "tampered, longer than before\n");
  rmSync(join(dest, "app.conf"));
  symlinkSync("/etc/passwd", join(dest, "app.conf"));
  const plan = await run("plan", { path: dest, source: v1 });
  t.equal(plan.status, "changed");
  // In archive order, which is the order tar read the directory in.
  t.same(plan.diff.split("\n").sort(), [
    "",
    "app.conf: links to /etc/passwd, the archive's to conf/app.conf",
    "bin/run: 29 bytes, the archive's 19",
    "missing conf/app.conf",
  ]);
  t.equal((await run("apply", { path: dest, source: v1 })).status, "changed");
  t.same(listing(dest), V1, "restored");
  t.equal((await run("plan", { path: dest, source: v1 })).status, "ok");

  // Version 2, a zip made by the system zip: only its digest differs in the spec.
  const src2 = tree(dir, "2");
  writeFileSync(join(src2, "NEW"), "new file\n");
  const zip = join(dir, "app.zip");
  sh("zip", ["-qry", zip, "."], src2);
  const v2 = await cacheBlob(zip);
  const size = readFileSync(zip).length;
  const next = await run("plan", { path: dest, source: v2 });
  t.equal(next.diff, `archive ${v1} (6 entries) -> ${v2} (${size} bytes)\n`);
  const apply = await run("apply", { path: dest, source: v2 });
  t.equal(apply.status, "changed", apply.message);
  t.same(listing(dest), ["NEW: new file\n", ...V1.map((l) => l.replace("version=1", "version=2"))]);
  t.equal((await run("apply", { path: dest, source: v2 })).status, "ok");
});

t.test("clean: true removes what is not the archive's; without it, others' files stay", async (t) => {
  const dir = scratch(t);
  const tgz = join(dir, "app.tgz");
  sh("tar", ["czf", tgz, "-C", tree(dir, "1"), "."]);
  const digest = await cacheBlob(tgz);
  const dest = join(dir, "app");
  mkdirSync(join(dest, "old/deep"), { recursive: true });
  writeFileSync(join(dest, "old/deep/x"), "x");
  writeFileSync(join(dest, "conf/../stray.txt"), "stray");
  mkdirSync(join(dest, "conf"), { recursive: true });
  writeFileSync(join(dest, "conf/local.conf"), "local");

  t.equal((await run("apply", { path: dest, source: digest })).status, "changed");
  t.ok(existsSync(join(dest, "conf/local.conf")), "clean: false keeps other files");
  t.equal((await run("plan", { path: dest, source: digest })).status, "ok");

  const plan = await run("plan", { path: dest, source: digest, clean: true });
  t.equal(plan.status, "changed");
  t.equal(plan.diff, "remove conf/local.conf\nremove old\nremove stray.txt\n");
  const apply = await run("apply", { path: dest, source: digest, clean: true });
  t.equal(apply.status, "changed", apply.message);
  t.equal(apply.message, "removed 3 not in the archive");
  t.same(listing(dest), V1, "exactly the archive's tree");
  t.equal((await run("plan", { path: dest, source: digest, clean: true })).status, "ok");
});

t.test("an unsafe archive fails and leaves the destination as it was", async (t) => {
  const dir = scratch(t);
  const evil = join(dir, "evil.tar");
  writeFileSync(
    join(dir, "make.py"),
    [
      "import io, sys, tarfile",
      "with tarfile.open(sys.argv[1], 'w') as tf:",
      "    for name, data in [('ok.txt', b'fine'), ('../../escaped.txt', b'evil')]:",
      "        ti = tarfile.TarInfo(name); ti.size = len(data); tf.addfile(ti, io.BytesIO(data))",
    ].join("\n"),
  );
  sh("python3", [join(dir, "make.py"), evil]);
  const digest = await cacheBlob(evil);

  const dest = join(dir, "app");
  mkdirSync(dest);
  writeFileSync(join(dest, "keep.txt"), "keep");
  const before = listing(dest);
  const r = await run("apply", { path: dest, source: digest, clean: true });
  t.equal(r.status, "failed");
  t.match(r.message, /refused \(unsafe_path\): "\.\.\/\.\.\/escaped\.txt": the name has a '\.\.' segment/);
  t.same(listing(dest), before, "nothing written, no temp directory left");
  t.notOk(existsSync(join(dir, "escaped.txt")));

  // A destination that did not exist is not left behind either.
  const fresh = join(dir, "new/parent/app");
  const r2 = await run("apply", { path: fresh, source: digest });
  t.equal(r2.status, "failed");
  t.notOk(existsSync(join(dir, "new")), "created parents removed again");
});

t.test("a symlink already in the destination is replaced, never written through", async (t) => {
  const dir = scratch(t);
  const tgz = join(dir, "app.tgz");
  sh("tar", ["czf", tgz, "-C", tree(dir, "1"), "."]);
  const digest = await cacheBlob(tgz);
  const outside = join(dir, "outside");
  mkdirSync(outside);
  const dest = join(dir, "app");
  mkdirSync(dest);
  symlinkSync(outside, join(dest, "conf"));
  symlinkSync(join(outside, "run"), join(dest, "bin"));
  t.equal((await run("apply", { path: dest, source: digest })).status, "changed");
  t.same(readdirSync(outside), [], "nothing written through the links");
  t.same(listing(dest), V1);

  const file = join(dir, "plain");
  writeFileSync(file, "x");
  const r = await run("plan", { path: file, source: digest });
  t.equal(r.status, "failed");
  t.match(r.message, /exists and is a file, not a directory/);
});

const root = process.getuid?.() === 0;
t.test("owner and group apply to everything extracted", async (t) => {
  // Not a skip: a machine that cannot chown must say so, or the suite would pass without proving it.
  if (!root) {
    t.fail("needs root (chown to another user)");
    return;
  }
  const dir = scratch(t);
  const tgz = join(dir, "app.tgz");
  sh("tar", ["czf", tgz, "-C", tree(dir, "1"), "."]);
  const digest = await cacheBlob(tgz);
  const dest = join(dir, "app");
  const daemon = Number(sh("id", ["-u", "daemon"]).toString().trim());
  const gid = Number(sh("getent", ["group", "daemon"]).toString().split(":")[2]);
  const spec = { path: dest, source: digest, owner: "daemon", group: "daemon" };
  const r = await run("apply", spec);
  t.equal(r.status, "changed", r.message);
  for (const p of ["", "bin", "bin/run", "conf", "conf/app.conf", "app.conf", "logs"]) {
    const st = lstatSync(join(dest, p));
    t.equal(`${st.uid}:${st.gid}`, `${daemon}:${gid}`, `${p || "the destination"}`);
  }
  t.equal(lstatSync(join(dest, "bin/run")).mode & 0o7777, 0o755, "mode kept after chown");
  t.equal((await run("plan", spec)).status, "ok");

  sh("chown", ["root:root", join(dest, "conf/app.conf")]);
  const drift = await run("plan", spec);
  t.equal(drift.diff, "conf/app.conf: owner is not daemon\n");
  t.equal((await run("apply", spec)).status, "changed");
  t.equal(lstatSync(join(dest, "conf/app.conf")).uid, daemon);
});

t.test("a cached blob changed since it was verified is dropped, nothing extracted", async (t) => {
  const dir = scratch(t);
  const tgz = join(dir, "app.tgz");
  sh("tar", ["czf", tgz, "-C", tree(dir, "1"), "."]);
  const digest = await cacheBlob(tgz);
  const file = await cache.path(digest);
  if (!file) throw new Error("not cached");
  writeFileSync(file, "not the archive any more");
  const dest = join(dir, "app");
  const r = await run("apply", { path: dest, source: digest });
  t.equal(r.status, "failed");
  t.match(r.message, /does not match its digest/);
  t.equal(await cache.path(digest), undefined, "dropped from the cache");
  t.notOk(existsSync(dest));
});

t.test("malformed specs", async (t) => {
  const r = await run("plan", { path: "/opt/x" } as Record<string, string>);
  t.match(r.message, /field "source" is required/);
  const bad = await run("plan", { path: "/", source: `sha256:${"0".repeat(64)}` });
  t.match(bad.message, /must not be \//);
  const extra = await run("plan", { path: "/opt/x", source: `sha256:${"0".repeat(64)}`, mode: "0755" });
  t.match(extra.message, /unknown field "mode"/);
});
