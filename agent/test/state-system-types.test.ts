import t from "tap";
import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { aptRepositoryProvider } from "../src/state/providers/apt-repository.js";
import { sysctlProvider } from "../src/state/providers/sysctl.js";
import { yumRepositoryProvider } from "../src/state/providers/yum-repository.js";
import { SpecError, UnsupportedError, type ProviderContext } from "../src/state/types.js";

// The system types on real files: sysctl (against a /proc/sys of the test's own, and the real one
// inside a network namespace the test makes), apt_repository (with a real `apt-get update` of a
// signed repository the test builds) and yum_repository.

const root = mkdtempSync(join(tmpdir(), "orch-system-types-"));
// apt drops to its _apt user to read a local repository and its key: the tree must be readable.
chmodSync(root, 0o755);
t.teardown(() => rmSync(root, { recursive: true, force: true }));
const ctx = (): ProviderContext => ({ deadline: Date.now() + 120_000 });
const dir = (...p: string[]) => {
  const d = join(root, ...p);
  mkdirSync(d, { recursive: true, mode: 0o755 });
  return d;
};

t.test("sysctl: the live value and its sysctl.d file, idempotent; vectors compare by fields", async (t) => {
  const proc = dir("proc-sys");
  const conf = dir("sysctl.d");
  mkdirSync(join(proc, "net/ipv4"), { recursive: true });
  writeFileSync(join(proc, "net/ipv4/ip_forward"), "0\n");
  writeFileSync(join(proc, "net/ipv4/ip_local_port_range"), "32768\t60999\n");
  const p = sysctlProvider({ dir: conf, procSys: proc });
  const spec = { name: "net.ipv4.ip_forward", value: 1 };

  const plan = await p.check(spec, ctx());
  t.equal(plan.changed, true);
  t.match(plan.diff, /^net\.ipv4\.ip_forward: 0 -> 1\n/);
  t.match(plan.diff, /\+net\.ipv4\.ip_forward = 1/);
  t.equal(readFileSync(join(proc, "net/ipv4/ip_forward"), "utf8"), "0\n", "check changed nothing");

  const applied = await p.apply(spec, ctx());
  t.equal(applied.changed, true);
  t.match(applied.message, /net\.ipv4\.ip_forward set to 1/);
  t.equal(readFileSync(join(proc, "net/ipv4/ip_forward"), "utf8"), "1\n");
  const file = join(conf, "99-orch-net.ipv4.ip_forward.conf");
  t.equal(
    readFileSync(file, "utf8"),
    "# Managed by orch (sysctl resource): edits here are reverted by the next apply.\nnet.ipv4.ip_forward = 1\n",
  );
  t.equal(statSync(file).mode & 0o777, 0o644);
  t.equal((await p.apply(spec, ctx())).changed, false, "a second apply changes nothing");
  t.equal((await p.check(spec, ctx())).observed.value, "1");

  const range = { name: "net.ipv4.ip_local_port_range", value: "32768   60999", persist: false };
  const r = await p.check(range, ctx());
  t.equal(r.changed, false, "tabs from the kernel and spaces from the module are the same vector");

  const gone = await p.apply({ name: "net.ipv4.ip_forward", state: "absent" }, ctx());
  t.equal(gone.changed, true);
  t.match(gone.message, /removed.*the running value \(1\) stays until reboot/);
  t.notOk(existsSync(file));

  await t.rejects(p.check({ name: "net.ipv4.nope", value: 1 }, ctx()), SpecError, "an unknown parameter");
  await t.rejects(p.check({ name: "net/ipv4", value: 1 }, ctx()), /must be a kernel parameter/);
  await t.rejects(p.check({ name: "net.ipv4.ip_forward", value: "1\n2" }, ctx()), /one line/);
  await t.rejects(
    sysctlProvider({ dir: join(root, "missing"), procSys: proc }).check(spec, ctx()),
    UnsupportedError,
    "no sysctl.d directory: unsupported, with the way out (persist: false)",
  );
});

t.test("sysctl: the real /proc/sys, inside a network namespace of the test's own", async (t) => {
  // unshare gives the child its own network stack, so net.* parameters there touch nothing else.
  const script = fileURLToPath(new URL("./fixtures/sysctl-netns.ts", import.meta.url));
  const conf = dir("netns-sysctl.d");
  const r = spawnSync(
    "unshare",
    ["--net", process.execPath, "--conditions=orch-source", "--import=tsx", script, conf],
    { encoding: "utf8", timeout: 60_000 },
  );
  t.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout) as Record<string, { changed: boolean; diff: string; live: string }>;
  t.equal(out.before!.live, "0", "a new namespace does not forward");
  t.equal(out.plan!.changed, true);
  t.equal(out.apply!.changed, true);
  t.equal(out.apply!.live, "1", "the kernel took the value");
  t.equal(out.again!.changed, false, "then nothing to do");
  t.match(readFileSync(join(conf, "99-orch-net.ipv4.ip_forward.conf"), "utf8"), /net\.ipv4\.ip_forward = 1/);
});

/** A key pair in a private GnuPG home, and a tiny repository signed with it (what a vendor publishes). */
function signedRepository() {
  const home = dir("gnupg");
  chmodSync(home, 0o700);
  const gpg = (args: string[], input?: string) =>
    execFileSync("gpg", ["--homedir", home, "--batch", "--yes", "--quiet", ...args], {
      input,
      encoding: "utf8",
      stdio: "pipe",
    });
  gpg(["--passphrase", "", "--quick-gen-key", "orch test repo <repo@example.test>", "ed25519", "sign", "1d"]);
  const key = gpg(["--armor", "--export", "repo@example.test"]);
  const repo = dir("repo");
  const bin = dir("repo", "dists", "stable", "main", "binary-amd64");
  writeFileSync(join(bin, "Packages"), "");
  const sha = createHash("sha256").update("").digest("hex");
  const release = [
    "Origin: orch-test",
    "Suite: stable",
    "Codename: stable",
    "Architectures: amd64",
    "Components: main",
    `Date: ${new Date().toUTCString()}`,
    "SHA256:",
    ` ${sha} 0 main/binary-amd64/Packages`,
    "",
  ].join("\n");
  writeFileSync(join(repo, "dists/stable/Release"), release);
  gpg([
    "--clearsign",
    "--local-user",
    "repo@example.test",
    "-o",
    join(repo, "dists/stable/InRelease"),
    join(repo, "dists/stable/Release"),
  ]);
  return { key, uri: `file:${repo}` };
}

t.test("apt_repository: a deb822 source with its key; apt-get update of that source only", async (t) => {
  const apt = dir("etc-apt");
  dir("etc-apt", "sources.list.d");
  const p = aptRepositoryProvider({ aptDir: apt });
  const repo = signedRepository();
  const spec = {
    name: "orch-test",
    uris: repo.uri,
    suites: ["stable"],
    components: "main",
    architectures: ["amd64"],
    key: repo.key,
  };
  const plan = await p.check(spec, ctx());
  t.equal(plan.changed, true);
  t.match(plan.diff, /# create file \(mode 0644\)/);
  t.match(plan.diff, /# then: apt-get update \(this source only\)/);
  t.notOk(existsSync(join(apt, "keyrings")), "check created nothing");

  const applied = await p.apply(spec, ctx());
  t.equal(applied.failed ?? false, false, `${applied.message}\n${applied.stderr}`);
  t.match(applied.message, /package lists updated/);
  const keyPath = join(apt, "keyrings", "orch-test.asc");
  t.equal(
    readFileSync(join(apt, "sources.list.d", "orch-test.sources"), "utf8"),
    [
      "# Managed by orch (apt_repository resource): edits here are reverted by the next apply.",
      "Types: deb",
      `URIs: ${repo.uri}`,
      "Suites: stable",
      "Components: main",
      "Architectures: amd64",
      `Signed-By: ${keyPath}`,
      "",
    ].join("\n"),
  );
  t.match(readFileSync(keyPath, "utf8"), /^-----BEGIN PGP PUBLIC KEY BLOCK-----/);
  t.equal((await p.apply(spec, ctx())).changed, false, "a second apply changes nothing and updates nothing");

  // A key that did not sign the repository: apt refuses the source and the resource fails, saying why.
  const other = gpgKeyOf("someone else <else@example.test>");
  const wrong = await p.apply({ ...spec, key: other }, ctx());
  t.equal(wrong.failed, true, "apt-get update failed (apt itself exits 0 here: it keeps the lists it had)");
  t.match(wrong.message, /apt-get update of this source failed: .*(GPG error|not signed)/);
  t.match(wrong.stderr, /NO_PUBKEY|not signed|public key is not available/);

  const disabled = await p.check({ ...spec, enabled: false, update: false }, ctx());
  t.match(disabled.diff, /\+Enabled: no/);
  t.notMatch(disabled.diff, /apt-get update/, "update: false");

  const gone = await p.apply({ name: "orch-test", state: "absent" }, ctx());
  t.equal(gone.changed, true);
  t.notOk(existsSync(keyPath), "its key goes with it");
  t.notOk(existsSync(join(apt, "sources.list.d", "orch-test.sources")));
  await t.rejects(p.check({ ...spec, key: "not a key" }, ctx()), /ASCII-armored OpenPGP public key/);
  await t.rejects(p.check({ name: "bad/name", uris: "x", suites: "y" }, ctx()), /must be 1-64 characters/);
  await t.rejects(aptRepositoryProvider({ aptDir: join(root, "no-apt") }).check(spec, ctx()), UnsupportedError);
});

function gpgKeyOf(uid: string): string {
  const home = mkdtempSync(join(root, "gnupg-"));
  const gpg = (args: string[]) =>
    execFileSync("gpg", ["--homedir", home, "--batch", "--yes", "--quiet", ...args], {
      encoding: "utf8",
      stdio: "pipe",
    });
  gpg(["--passphrase", "", "--quick-gen-key", uid, "ed25519", "sign", "1d"]);
  return gpg(["--armor", "--export", uid.replace(/.*<|>.*/g, "")]);
}

t.test("yum_repository: one .repo section and its key file; absent removes both", async (t) => {
  const repos = dir("yum.repos.d");
  const keys = join(root, "rpm-gpg");
  const p = yumRepositoryProvider({ reposDir: repos, keyDir: keys });
  const key = gpgKeyOf("rpm repo <rpm@example.test>");
  const spec = {
    name: "orch-el",
    display_name: "orch packages",
    baseurl: ["https://rpm.example.test/el9", "https://mirror.example.test/el9"],
    key,
  };
  t.equal((await p.check(spec, ctx())).changed, true);
  const applied = await p.apply(spec, ctx());
  t.equal(applied.changed, true);
  const keyPath = join(keys, "RPM-GPG-KEY-orch-orch-el");
  t.equal(
    readFileSync(join(repos, "orch-el.repo"), "utf8"),
    [
      "# Managed by orch (yum_repository resource): edits here are reverted by the next apply.",
      "[orch-el]",
      "name=orch packages",
      "baseurl=https://rpm.example.test/el9 https://mirror.example.test/el9",
      "enabled=1",
      "gpgcheck=1",
      `gpgkey=file://${keyPath}`,
      "",
    ].join("\n"),
  );
  t.ok(existsSync(keyPath), "the key directory was made");
  t.equal((await p.check(spec, ctx())).changed, false);
  const off = await p.check({ ...spec, enabled: false }, ctx());
  t.match(off.diff, /-enabled=1\n\+enabled=0/);
  await t.rejects(p.check({ name: "x" }, ctx()), /one of "baseurl", "mirrorlist" or "metalink"/);
  await t.rejects(p.check({ ...spec, gpgkey: "https://k" }, ctx()), /at most one of "key" and "gpgkey"/);
  t.equal((await p.apply({ name: "orch-el", state: "absent" }, ctx())).changed, true);
  t.notOk(existsSync(keyPath));
  await t.rejects(
    yumRepositoryProvider({ reposDir: join(root, "none") }).check(spec, ctx()),
    /is this an RPM-based system/,
  );
});
