// The one-line install script (services/gateway/src/install/agent.sh): shellcheck on the template
// and on what the gateway renders, then the rendered script run for real on this host with
// ORCH_INSTALL_ROOT against the real gateway and agents service serving a fixture release.
import { execFile, execFileSync } from "node:child_process";
import { createServer, type Server } from "node:http";
import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync, statSync, writeFileSync } from "node:fs";
import { generateKeyPairSync } from "node:crypto";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { createTestDatabase, startNats } from "@orch/kit/testing";
import { startAgentsService } from "../services/agents/test/harness.js";
import { releaseFixture, startInstallGateway } from "../services/gateway/test/install-fixture.js";

const TEMPLATE = new URL("../services/gateway/src/install/agent.sh", import.meta.url).pathname;
const TOKEN = `ojt_${"0".repeat(26)}.${"A".repeat(43)}`;

const nats = await startNats();
const db = await createTestDatabase();
const agents = await startAgentsService(nats, db);
const fx = releaseFixture();
fx.addRelease("0.1.0");
fx.addRelease("0.2.0");
const gw = await startInstallGateway(nats, { dir: fx.dir, public_key_file: fx.pubFile });
const work = mkdtempSync(join(tmpdir(), "orch-install-"));
t.teardown(async () => {
  await gw.stop();
  await agents.stop();
  await db.drop();
  await nats.stop();
  fx.cleanup();
  rmSync(work, { recursive: true, force: true });
});

const rendered = await (await fetch(`${gw.url}/install/agent.sh`)).text();
const scriptFile = join(work, "agent.sh");
writeFileSync(scriptFile, rendered);

let n = 0;
/** Runs a script file with sh and ORCH_INSTALL_ROOT=<fresh or given dir>. */
function runScript(args: string[], o: { root?: string; script?: string; env?: Record<string, string> } = {}) {
  const root = o.root ?? join(work, `root-${++n}`);
  return new Promise<{ code: number; stdout: string; stderr: string; root: string }>((resolve) => {
    execFile(
      "sh",
      [o.script ?? scriptFile, ...args],
      { env: { ...process.env, ORCH_INSTALL_ROOT: root, ...o.env }, timeout: 60_000 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === "number" ? err.code : 1) : 0;
        resolve({ code, stdout, stderr, root });
      },
    );
  });
}

const shellcheck = (file: string) => {
  try {
    execFileSync("shellcheck", ["-s", "sh", file], { encoding: "utf8" });
    return "";
  } catch (err) {
    return String((err as { stdout?: string }).stdout ?? err);
  }
};

t.test("shellcheck -s sh: the template and the rendered script", async (t) => {
  t.equal(shellcheck(TEMPLATE), "", "template is clean");
  t.equal(shellcheck(scriptFile), "", "rendered script is clean");
  t.notMatch(rendered, /@@[A-Z_]+@@/);
});

t.test("installs the latest release under ORCH_INSTALL_ROOT and writes agent.env", async (t) => {
  const r = await runScript(["--token", TOKEN, "--no-start"]);
  t.equal(r.code, 0, r.stderr);
  t.match(r.stdout, /signature verified/);
  t.match(r.stdout, /size and sha256 verified/);
  t.match(r.stdout, /installed orch-agent 0\.2\.0 \(tar, (amd64|arm64)\)/);
  t.ok(r.stdout.includes(`into ${r.root}/opt/orch-agent\n`), "the install path is printed as it is");
  t.notMatch(r.stdout + r.stderr, TOKEN, "the token is never printed");
  const rel = join(r.root, "opt/orch-agent/releases/0.2.0");
  t.ok(existsSync(join(rel, "bin/orch-agent")), "package extracted");
  t.equal(readlinkSync(join(r.root, "opt/orch-agent/current")), "releases/0.2.0");
  t.match(execFileSync(join(rel, "bin/orch-agent"), { encoding: "utf8" }), /orch-agent 0\.2\.0/);
  t.equal(statSync(join(r.root, "var/lib/orch-agent")).mode & 0o777, 0o700);

  const envFile = join(r.root, "etc/orch-agent/agent.env");
  t.equal(statSync(envFile).mode & 0o777, 0o600, "agent.env is 0600 (it holds the token)");
  const link = /FINGERPRINT='([^']*)'/.exec(rendered)?.[1] ?? "";
  t.match(link, /^sha256:[0-9a-f]{64}$/);
  t.equal(
    readFileSync(envFile, "utf8"),
    [
      `ORCH_AGENT_SERVER=${agents.server}`,
      `ORCH_AGENT_SERVER_FINGERPRINT=${link}`,
      `ORCH_AGENT_JOIN_TOKEN=${TOKEN}`,
      `ORCH_AGENT_PACKAGES_URL=${gw.url}/install`,
      "ORCH_AGENT_RELEASE_KEY=/etc/orch-agent/release.pub",
      "",
    ].join("\n"),
  );
  t.equal(readFileSync(join(r.root, "etc/orch-agent/release.pub"), "utf8"), fx.publicKeyPem);

  // A re-run without --token keeps the token and the operator's own lines; flags win.
  writeFileSync(envFile, `${readFileSync(envFile, "utf8")}ORCH_AGENT_LOG_LEVEL=debug\n`);
  const again = await runScript(["--version", "0.1.0", "--server", "orch.example:7443", "--no-start"], {
    root: r.root,
  });
  t.equal(again.code, 0, again.stderr);
  const env = readFileSync(envFile, "utf8");
  t.match(env, `ORCH_AGENT_JOIN_TOKEN=${TOKEN}\n`);
  t.match(env, "ORCH_AGENT_LOG_LEVEL=debug\n");
  t.match(env, "ORCH_AGENT_SERVER=orch.example:7443\n");
  t.equal(env.match(/ORCH_AGENT_SERVER=/g)?.length, 1, "managed keys appear once");
  t.equal(readlinkSync(join(r.root, "opt/orch-agent/current")), "releases/0.1.0", "--version installs that release");
});

t.test("options and environment are checked before anything is fetched", async (t) => {
  const help = await runScript(["--help"]);
  t.equal(help.code, 0);
  t.match(help.stdout, /--token T/);
  for (const [args, msg] of [
    [["--token", "not-a-token"], /not a join token/],
    [["--version", "../../x"], /not a version/],
    [["--server", "a b"], /expected host:port/],
    [["--package", "rpm"], /deb or tar/],
    [["--package", "deb"], /tar packages only/],
    [["--bogus"], /unknown option/],
  ] as const) {
    const r = await runScript([...args]);
    t.not(r.code, 0, args.join(" "));
    t.match(r.stderr, msg, args.join(" "));
    t.notOk(existsSync(join(r.root, "opt")) || existsSync(join(r.root, "etc")), "nothing written");
  }
  const nope = await runScript(["--version", "9.9.9"]);
  t.not(nope.code, 0);
  t.match(nope.stderr, /download failed/);
  // A PATH without openssl: the script names what is missing and how to install it.
  const bin = join(work, "bin-no-openssl");
  execFileSync("sh", [
    "-c",
    `mkdir -p ${bin} && for c in sh uname id mkdir curl sha256sum base64 mktemp tar grep sed head cut tr wc rm mv cp chmod cat dpkg apt-get; do p=$(command -v $c) && ln -sf "$p" ${bin}/$c; done; true`,
  ]);
  const missing = await runScript([], { env: { PATH: bin } });
  t.not(missing.code, 0);
  t.match(missing.stderr, /missing: openssl/);
  t.match(missing.stderr, /install with: apt-get install -y/);
});

t.test("a tampered package is refused and nothing is installed", async (t) => {
  const m = fx.addRelease("0.3.0");
  for (const p of m.packages) {
    const f = join(fx.dir, "0.3.0", p.file);
    const b = readFileSync(f);
    b[b.length - 20] = (b[b.length - 20] ?? 0) ^ 0xff; // same size, different bytes
    writeFileSync(f, b);
  }
  await new Promise((r) => setTimeout(r, 5100)); // the gateway re-reads its catalog every 5 s
  const r = await runScript(["--version", "0.3.0", "--token", TOKEN]);
  t.not(r.code, 0);
  t.match(r.stderr, /checksum mismatch/);
  t.match(r.stderr, /nothing installed/);
  t.notOk(existsSync(join(r.root, "opt")), "nothing under opt/");
  t.notOk(existsSync(join(r.root, "etc/orch-agent/agent.env")), "no agent.env");
});

t.test("a tampered manifest, another version's manifest or another key: refused", async (t) => {
  // A man in the middle rewrites the manifest (e.g. to match a package of its own).
  const proxy: Server = createServer(async (req, res) => {
    const up = await fetch(`${gw.url}${req.url}`);
    let body = Buffer.from(await up.arrayBuffer());
    if (req.url?.endsWith("/manifest.json")) body = Buffer.from(body.toString().replace(/"size":\d+/, '"size":1'));
    res.writeHead(up.status, { "content-length": body.length });
    res.end(body);
  });
  await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
  t.teardown(() => new Promise<void>((r) => proxy.close(() => r())));
  const addr = proxy.address();
  const proxyUrl = `http://127.0.0.1:${typeof addr === "object" && addr ? addr.port : 0}`;
  const viaProxy = join(work, "agent-proxy.sh");
  writeFileSync(viaProxy, rendered.replace(`BASE_URL='${gw.url}'`, `BASE_URL='${proxyUrl}'`));
  const r = await runScript(["--token", TOKEN], { script: viaProxy });
  t.not(r.code, 0);
  t.match(r.stderr, /signature refused/);
  t.notOk(existsSync(join(r.root, "opt")) || existsSync(join(r.root, "etc")), "nothing written");

  // A validly signed manifest of another version than asked for (a stale cache, a swapped
  // directory): served for 0.2.0, it is 0.1.0's, signature and all.
  const swap: Server = createServer(async (req, res) => {
    const up = await fetch(
      `${gw.url}${(req.url ?? "").replace("/releases/0.2.0/manifest.json", "/releases/0.1.0/manifest.json")}`,
    );
    const body = Buffer.from(await up.arrayBuffer());
    res.writeHead(up.status, { "content-length": body.length });
    res.end(body);
  });
  await new Promise<void>((r) => swap.listen(0, "127.0.0.1", r));
  t.teardown(() => new Promise<void>((r) => swap.close(() => r())));
  const swapAddr = swap.address();
  const viaSwap = join(work, "agent-swap.sh");
  writeFileSync(
    viaSwap,
    rendered.replace(
      `BASE_URL='${gw.url}'`,
      `BASE_URL='http://127.0.0.1:${typeof swapAddr === "object" && swapAddr ? swapAddr.port : 0}'`,
    ),
  );
  const s = await runScript(["--version", "0.2.0", "--token", TOKEN], { script: viaSwap });
  t.not(s.code, 0, "another version's signed manifest is refused");
  t.match(s.stderr, /version mismatch: asked for 0\.2\.0, the signed manifest is of 0\.1\.0; nothing installed/);
  t.notMatch(s.stdout, /signature verified/, "not reported as verified");
  t.notOk(existsSync(join(s.root, "opt")) || existsSync(join(s.root, "etc")), "nothing written");

  // A script carrying another key (or a server whose key changed) refuses the real manifest.
  const other = generateKeyPairSync("ed25519").publicKey.export({ type: "spki", format: "pem" }).toString().trim();
  const wrongKey = join(work, "agent-wrong-key.sh");
  writeFileSync(wrongKey, rendered.replace(/RELEASE_PUB='[^']*'/, `RELEASE_PUB='${other}'`));
  const w = await runScript([], { script: wrongKey });
  t.not(w.code, 0);
  t.match(w.stderr, /signature refused/);
  t.notOk(existsSync(join(w.root, "opt")), "nothing installed");
});
