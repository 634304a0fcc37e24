/**
 * npm run build:agent-package for real (one build, slow: ~30 s): the manifest matches the files,
 * the .deb and the tarball hold the install layout, and the extracted release runs on its own
 * Node.js. Needs dpkg-deb, tar and shellcheck.
 */
import { execFileSync } from "node:child_process";
import { createHash, generateKeyPairSync } from "node:crypto";
import { mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { parseReleaseManifest } from "@orch/contracts";
import { verifyManifest } from "@orch/kit/releases";
import { buildAgentPackage } from "../../scripts/agent-package/build.js";
import { NODE_RUNTIME_VERSION } from "../../scripts/agent-package/runtime.js";

t.setTimeout(600_000);
const VERSION = "0.9.1-test.1";
const work = mkdtempSync(join(tmpdir(), "orch-agent-package-test-"));
t.teardown(() => rmSync(work, { recursive: true, force: true }));
const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: "utf8" });

const { privateKey, publicKey } = generateKeyPairSync("ed25519");
const { dir, manifest } = await buildAgentPackage({
  version: VERSION,
  outDir: join(work, "out"),
  signingKey: privateKey,
});
const deb = join(dir, `orch-agent_${VERSION}_amd64.deb`);
const tar = join(dir, `orch-agent-${VERSION}-linux-amd64.tar.gz`);
const release = `opt/orch-agent/releases/${VERSION}`;

t.test("manifest.json lists the two packages with their real sha256 and size", async (t) => {
  t.equal(dir, join(work, "out", VERSION));
  const text = readFileSync(join(dir, "manifest.json"), "utf8");
  t.same(parseReleaseManifest(text), manifest);
  t.match(manifest, { schema: 1, name: "orch-agent", version: VERSION, node_version: `v${NODE_RUNTIME_VERSION}` });
  t.same(
    manifest.packages.map((p) => [p.kind, p.arch, p.file]),
    [
      ["deb", "amd64", `orch-agent_${VERSION}_amd64.deb`],
      ["tar", "amd64", `orch-agent-${VERSION}-linux-amd64.tar.gz`],
    ],
  );
  for (const p of manifest.packages) {
    const bytes = readFileSync(join(dir, p.file));
    t.equal(p.size, bytes.length, `${p.file} size`);
    t.equal(p.sha256, createHash("sha256").update(bytes).digest("hex"), `${p.file} sha256`);
    t.ok(p.size < 60 * 1024 * 1024, `${p.file} ≤ 60 MB (${(p.size / 1048576).toFixed(1)} MB)`);
    t.match(text, new RegExp(`^ {4}\\{"file":"${p.file.replace(/\./g, "\\.")}".*"sha256":"${p.sha256}"`, "m"));
  }
});

t.test("the manifest is signed at build: manifest.json.sig beside it verifies with the release key", async (t) => {
  const sig = readFileSync(join(dir, "manifest.json.sig"), "utf8");
  const pub = publicKey.export({ type: "spki", format: "pem" }).toString();
  t.ok(verifyManifest(readFileSync(join(dir, "manifest.json")), sig, pub), "verifies");
  // What the install script runs (openssl, not node) accepts it too.
  const sigBin = join(work, "sig.bin");
  const pubFile = join(work, "release.pub");
  writeFileSync(sigBin, Buffer.from(sig.trim(), "base64"));
  writeFileSync(pubFile, pub);
  const args = ["pkeyutl", "-verify", "-pubin", "-inkey", pubFile, "-rawin", "-in", join(dir, "manifest.json")];
  t.match(sh("openssl", [...args, "-sigfile", sigBin]), /Signature Verified Successfully/);
});

t.test("the .deb holds the install layout and says what it is", async (t) => {
  const listing = sh("dpkg-deb", ["-c", deb]);
  for (const path of [
    `./${release}/bin/orch-agent`,
    `./${release}/node/bin/node`,
    `./${release}/node/LICENSE`,
    `./${release}/lib/orch-agent.mjs`,
    `./${release}/lib/node_modules/node-pty/package.json`,
    `./${release}/lib/node_modules/node-pty/lib/index.js`,
    `./${release}/lib/node_modules/node-pty/build/Release/pty.node`,
    `./${release}/package.json`,
    "./lib/systemd/system/orch-agent.service",
    "./etc/orch-agent/",
  ])
    t.match(listing, new RegExp(` ${path.replace(/[.+]/g, "\\$&")}$`, "m"), path);
  t.match(listing, new RegExp(`^-rwxr-xr-x root/root .* \\./${release}/bin/orch-agent$`, "m"));
  t.match(listing, new RegExp(`^lrwxrwxrwx root/root .* \\./opt/orch-agent/current -> releases/${VERSION}$`, "m"));
  t.match(
    listing,
    /^lrwxrwxrwx root\/root .* \.\/usr\/bin\/orch-agent -> \/opt\/orch-agent\/current\/bin\/orch-agent$/m,
  );
  t.notMatch(listing, /node_modules\/(pg|nats|fastify|@nats-io)/);

  const field = (f: string) => sh("dpkg-deb", ["-f", deb, f]).trim();
  t.equal(field("Package"), "orch-agent");
  t.equal(field("Version"), "0.9.1~test.1", "a '-' suffix becomes '~' (sorts before 0.9.1, as compareVersions does)");
  t.equal(field("Architecture"), "amd64");
  t.match(field("Depends"), /libc6/);
  t.ok(Number(field("Installed-Size")) > 100_000, "Installed-Size in KiB");
  t.match(field("Description"), /Node\.js runtime \(v24\./);
});

t.test("the tarball extracts to a release that runs on its own Node.js", async (t) => {
  const root = join(work, "root");
  sh("mkdir", ["-p", root]);
  sh("tar", ["-xzf", tar, "-C", root]);
  const members = sh("tar", ["-tzf", tar]).split("\n").filter(Boolean);
  t.notOk(
    members.some((m) => /^(lib|usr|usr\/bin|lib\/systemd|lib\/systemd\/system|etc|opt)\/?$/.test(m)),
    "no entries for shared directories (a merged-/usr symlink survives tar -x -C /)",
  );
  t.ok(members.includes("lib/systemd/system/orch-agent.service") && members.includes("usr/bin/orch-agent"));
  t.equal(readlinkSync(join(root, "opt/orch-agent/current")), `releases/${VERSION}`);
  t.match(readFileSync(join(root, "lib/systemd/system/orch-agent.service"), "utf8"), /^User=root$/m);

  const out = sh(join(root, "opt/orch-agent/current/bin/orch-agent"), ["--version"]);
  t.equal(out, `orch-agent ${VERSION} (node v${NODE_RUNTIME_VERSION})\n`);
  t.match(out, /node v24\./);
  const node = join(root, release, "node/bin/node");
  t.equal(sh(node, ["--version"]).trim(), `v${NODE_RUNTIME_VERSION}`, "the pinned runtime");
  t.ok((statSync(node).mode & 0o111) !== 0);
  // The native module loads on the bundled runtime (N-API): spawn a real PTY with it.
  const pty = sh(node, [
    "--input-type=module",
    "-e",
    `import { createRequire } from "node:module";
     const pty = createRequire(${JSON.stringify(join(root, release, "lib/x.mjs"))})("node-pty");
     const p = pty.spawn("/bin/sh", ["-c", "echo pty-ok"], {});
     p.onData((d) => process.stdout.write(d));`,
  ]);
  t.match(pty, /pty-ok/);
});

t.test("the maintainer scripts and the launcher are shellcheck-clean POSIX sh", async (t) => {
  const control = join(work, "control");
  sh("dpkg-deb", ["-e", deb, control]);
  const scripts = ["postinst", "prerm", "postrm"].map((s) => join(control, s));
  for (const s of scripts) t.ok((statSync(s).mode & 0o755) === 0o755, `${s} is executable`);
  const wrapper = join(work, "root", release, "bin/orch-agent");
  t.doesNotThrow(() => sh("shellcheck", ["--shell=sh", "--severity=style", ...scripts, wrapper]));
  const postinst = readFileSync(scripts[0]!, "utf8");
  t.match(postinst, /\[ -d \/run\/systemd\/system \]/);
  t.match(postinst, /chmod 0700 \/var\/lib\/orch-agent/);
  t.match(readFileSync(scripts[1]!, "utf8"), /\[ -d \/run\/systemd\/system \][\s\S]*systemctl stop/);
});
