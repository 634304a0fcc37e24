import t from "tap";
import { generateKeyPairSync } from "node:crypto";
import { existsSync, readFileSync, readlinkSync } from "node:fs";
import { join } from "node:path";
import { createUpgradeFeature } from "../src/upgrade/feature.js";
import { markerPath, writeMarker } from "../src/upgrade/marker.js";
import { fakeRuntime, installRelease, startFixture } from "./upgrade-harness.js";

// The upgrader against a real install root in a temp dir, real tarballs, real signatures and a
// real HTTP server; only the daemon is a stand-in (it records link-ups and exits).

async function setup(t: { teardown(fn: () => unknown): void }, opts: { installed?: boolean } = {}) {
  const fx = await startFixture();
  t.teardown(() => fx.close());
  const running = installRelease(fx.root, "0.1.0");
  const env = opts.installed === false ? {} : { ORCH_AGENT_RELEASE_DIR: running };
  const agent = fakeRuntime({ dataDir: fx.dataDir, packagesUrl: fx.url, releaseKeyFile: fx.keyFile });
  await createUpgradeFeature({ env, currentVersion: "0.1.0", arch: "x64", exitDelayMs: 1 })(agent.rt);
  return { fx, agent, running };
}

const current = (root: string) => readlinkSync(join(root, "current"));

t.test("accepted: release unpacked beside the old one, current switched, marker written, exit 0", async (t) => {
  const { fx, agent, running } = await setup(t);
  fx.publish("0.2.0");
  const reply = await agent.upgrade("0.2.0", 90);
  t.equal(reply.accepted, true, String(reply.message));
  t.ok(existsSync(join(fx.root, "releases/0.2.0/bin/orch-agent")), "new release in place");
  t.ok(existsSync(join(fx.root, "releases/0.1.0/bin/orch-agent")), "old release kept");
  t.equal(current(fx.root), "releases/0.2.0", "current points at the new release (relative)");
  const marker = JSON.parse(readFileSync(markerPath(fx.dataDir), "utf8"));
  t.match(marker, { from: "0.1.0", to: "0.2.0", from_dir: running });
  t.ok(marker.deadline_at > Date.now() + 80_000, "deadline from deadline_seconds");
  await new Promise((r) => setTimeout(r, 20));
  t.same(agent.exits, [0], "exits so the unit restarts it");
  const again = await agent.upgrade("0.2.0");
  t.equal(again.reason, "upgrade_in_progress", "one upgrade at a time");
});

t.test("tampered tarball: checksum_mismatch, nothing changed", async (t) => {
  const { fx, agent } = await setup(t);
  fx.publish("0.2.0", { tamper: true });
  const reply = await agent.upgrade("0.2.0");
  t.match(reply, { accepted: false, reason: "checksum_mismatch" });
  t.equal(current(fx.root), "releases/0.1.0");
  t.notOk(existsSync(join(fx.root, "releases/0.2.0")), "nothing staged");
  t.notOk(existsSync(markerPath(fx.dataDir)));
  t.same(agent.exits, []);
});

t.test("manifest signed by another key: signature_invalid", async (t) => {
  const { fx, agent } = await setup(t);
  fx.publish("0.2.0", { signWith: generateKeyPairSync("ed25519").privateKey });
  t.match(await agent.upgrade("0.2.0"), { accepted: false, reason: "signature_invalid" });
  t.equal(current(fx.root), "releases/0.1.0");
});

t.test("manifest edited after signing: signature_invalid", async (t) => {
  const { fx, agent } = await setup(t);
  fx.publish("0.2.0");
  const m = fx.files.get("0.2.0/manifest.json")!;
  fx.files.set("0.2.0/manifest.json", Buffer.from(m.toString().replace(/"size":\d+/, '"size":1')));
  t.match(await agent.upgrade("0.2.0"), { accepted: false, reason: "signature_invalid" });
});

t.test("unknown version on the server: download_failed", async (t) => {
  const { agent } = await setup(t);
  t.match(await agent.upgrade("9.9.9"), { accepted: false, reason: "download_failed" });
});

t.test("same version: already_current", async (t) => {
  const { agent } = await setup(t);
  t.match(await agent.upgrade("0.1.0"), { accepted: false, reason: "already_current" });
});

t.test("not installed (no ORCH_AGENT_RELEASE_DIR): upgrade_unsupported", async (t) => {
  const { fx, agent } = await setup(t, { installed: false });
  fx.publish("0.2.0");
  t.match(await agent.upgrade("0.2.0"), { accepted: false, reason: "upgrade_unsupported" });
  t.equal(current(fx.root), "releases/0.1.0");
});

t.test("watchdog: no link up before the deadline switches current back and exits 1", async (t) => {
  const fx = await startFixture();
  t.teardown(() => fx.close());
  const old = installRelease(fx.root, "0.1.0");
  fx.publish("0.2.0");
  // The old release stages the new one (as in the accepted case)...
  const before = fakeRuntime({ dataDir: fx.dataDir, packagesUrl: fx.url, releaseKeyFile: fx.keyFile });
  await createUpgradeFeature({
    env: { ORCH_AGENT_RELEASE_DIR: old },
    currentVersion: "0.1.0",
    arch: "x64",
    exitDelayMs: 1,
  })(before.rt);
  t.equal((await before.upgrade("0.2.0")).accepted, true);
  // ...and the new one starts with a deadline already close.
  const marker = JSON.parse(readFileSync(markerPath(fx.dataDir), "utf8"));
  await writeMarker(fx.dataDir, { ...marker, deadline_at: Date.now() + 100 });
  const after = fakeRuntime({ dataDir: fx.dataDir, packagesUrl: fx.url, releaseKeyFile: fx.keyFile });
  await createUpgradeFeature({
    env: { ORCH_AGENT_RELEASE_DIR: join(fx.root, "releases/0.2.0") },
    currentVersion: "0.2.0",
    arch: "x64",
  })(after.rt);
  await new Promise((r) => setTimeout(r, 400));
  t.equal(current(fx.root), "releases/0.1.0", "switched back");
  t.notOk(existsSync(markerPath(fx.dataDir)), "marker removed");
  t.same(after.exits, [1]);
});

t.test("watchdog: a link up confirms the new release", async (t) => {
  const fx = await startFixture();
  t.teardown(() => fx.close());
  const old = installRelease(fx.root, "0.1.0");
  await writeMarker(fx.dataDir, { id: "x", from: "0.1.0", to: "0.2.0", from_dir: old, deadline_at: Date.now() + 300 });
  const after = fakeRuntime({ dataDir: fx.dataDir });
  await createUpgradeFeature({
    env: { ORCH_AGENT_RELEASE_DIR: join(fx.root, "releases/0.2.0") },
    currentVersion: "0.2.0",
  })(after.rt);
  after.linkUp();
  await new Promise((r) => setTimeout(r, 500));
  t.notOk(existsSync(markerPath(fx.dataDir)), "marker removed");
  t.equal(current(fx.root), "releases/0.1.0", "current untouched by the watchdog (this fixture never switched it)");
  t.same(after.exits, []);
});

t.test("watchdog: a marker for another version is stale and removed", async (t) => {
  const fx = await startFixture();
  t.teardown(() => fx.close());
  const old = installRelease(fx.root, "0.1.0");
  await writeMarker(fx.dataDir, { id: "x", from: "0.1.0", to: "0.2.0", from_dir: old, deadline_at: Date.now() + 100 });
  const rt = fakeRuntime({ dataDir: fx.dataDir });
  await createUpgradeFeature({ env: { ORCH_AGENT_RELEASE_DIR: old }, currentVersion: "0.1.0" })(rt.rt);
  t.notOk(existsSync(markerPath(fx.dataDir)));
  await new Promise((r) => setTimeout(r, 200));
  t.same(rt.exits, []);
});

t.test("options: --packages-url / --release-key and their environment variables", async (t) => {
  const { parseOptions } = await import("../src/options.js");
  const base = ["--server", "h:1", "--insecure"];
  const o = parseOptions([...base, "--packages-url", "https://s/install", "--release-key", "/etc/k.pub"], {});
  t.match(o, { packagesUrl: "https://s/install", releaseKeyFile: "/etc/k.pub" });
  const e = parseOptions(base, { ORCH_AGENT_PACKAGES_URL: "http://s:8080/install", ORCH_AGENT_RELEASE_KEY: "/k" });
  t.match(e, { packagesUrl: "http://s:8080/install", releaseKeyFile: "/k" });
  t.throws(() => parseOptions([...base, "--packages-url", "ftp://x"], {}), /--packages-url must be an http\(s\) URL/);
  t.throws(() => parseOptions([...base, "--release-key", "rel.pub"], {}), /--release-key must be an absolute path/);
});
