import t from "tap";
import { execFile } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createTestDatabase, eventually, startNats, startSystem } from "@orch/kit/testing";
import { cli } from "../../cli/test/helpers/cli.js";
import { releaseFixture } from "../../services/gateway/test/install-fixture.js";

// The install line orchctl prints, against the real gateway, auth and agents processes of a server
// that has published no orch-agent package yet (a release key, an empty releases.dir): run as
// documented, `curl -fsSL … | sh` must fail and say why, not "succeed" on an empty script; orchctl
// says so when it prints the line. Then a release appears in releases.dir and the same line
// installs it (under ORCH_INSTALL_ROOT, so no root is needed). Needs `npm run build`.

const fx = releaseFixture();
const work = mkdtempSync(join(tmpdir(), "orch-install-unpublished-"));
t.teardown(() => {
  fx.cleanup();
  rmSync(work, { recursive: true, force: true });
});
const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "audit", "agents", "gateway"],
  env: { ORCH_RELEASES_DIR: fx.dir, ORCH_RELEASES_PUBLIC_KEY_FILE: fx.pubFile },
});

const adminPem = join(work, "admin.pem");
writeFileSync(adminPem, system.admin.privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
const env = { ORCHCTL_HOME: join(work, "home"), HOME: work };
const orchctl = (...args: string[]) => cli(args, env);
const login = await orchctl("--server", system.url, "login", "--key", adminPem);
if (login.code !== 0) throw new Error(login.stderr);

/** The printed install line, run by bash with pipefail as a careful operator would (sudo left out). */
function runLine(line: string, root: string) {
  const cmd = line.replace("| sudo sh", "| sh");
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(
      "bash",
      ["-o", "pipefail", "-c", cmd],
      { env: { ...process.env, ORCH_INSTALL_ROOT: root }, timeout: 120_000 },
      (err, stdout, stderr) =>
        resolve({ code: err ? (typeof err.code === "number" ? err.code : -1) : 0, stdout, stderr }),
    );
  });
}

t.test("no package published: orchctl says so, and the install line fails saying why", async (t) => {
  const r = await orchctl("--json", "join-tokens", "create", "--ttl", "1h");
  t.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(r.stdout) as {
    install: string;
    agent_packages: { latest: string | null; unavailable: { code: string; detail: string } | null };
  };
  t.equal(doc.agent_packages.latest, null);
  t.equal(doc.agent_packages.unavailable?.code, "agent_packages_unavailable");
  t.match(doc.agent_packages.unavailable?.detail, "npm run build:agent-package", "says how to publish one");

  const human = await orchctl("join-tokens", "create", "--ttl", "1h");
  t.equal(human.code, 0, human.stderr);
  t.match(human.stdout, "install an agent with it:");
  t.match(human.stderr, "cannot install an agent yet (agent_packages_unavailable)");
  t.match(human.stderr, "npm run build:agent-package");

  t.match(doc.install, /^curl -fsSL \S+\/install\/agent\.sh \| sudo sh -s -- --token ojt_\S+$/);
  const root = join(work, "root-none");
  const run = await runLine(doc.install, root);
  t.equal(run.code, 1, "the pipeline exits 1");
  t.match(run.stderr, "cannot install an agent now (agent_packages_unavailable)");
  t.match(run.stderr, "no orch-agent package is published on this server yet");
  t.match(run.stderr, "npm run build:agent-package");
  t.match(run.stderr, "nothing was installed");
  t.notOk(existsSync(root), "nothing written");
});

t.test("once a release is published the same kind of line installs it", async (t) => {
  fx.addRelease("0.1.0");
  // The gateway re-reads releases.dir when its cached read is older than the catalog's TTL.
  await eventually(async () => (await system.api("GET", "/api/v1/agent-packages")).body?.latest === "0.1.0", 30_000);
  const r = await orchctl("--json", "join-tokens", "create", "--ttl", "1h");
  t.equal(r.code, 0, r.stderr);
  const doc = JSON.parse(r.stdout) as { install: string; agent_packages: unknown };
  t.same(doc.agent_packages, { latest: "0.1.0", versions: ["0.1.0"], unavailable: null });
  const human = await orchctl("join-tokens", "create", "--ttl", "1h");
  t.equal(human.stderr, "", "no note once a package is published");

  const root = join(work, "root-published");
  const run = await runLine(`${doc.install} --no-start`, root);
  t.equal(run.code, 0, run.stderr);
  t.match(run.stdout, /installed orch-agent 0\.1\.0 \(tar, (amd64|arm64)\)/);
  t.ok(existsSync(join(root, "opt/orch-agent/releases/0.1.0/bin/orch-agent")), "the package is in place");
});
