import t from "tap";
import { execFile } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { existsSync } from "node:fs";
import { copyFile, mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import pg from "pg";
import { debFileName, tarFileName } from "@orch/contracts";
import { createTestDatabase, eventually, freePort, startNats, startSystem } from "@orch/kit/testing";
import { assertNoNode, ensureDebianRoot, overlayRoot, type Overlay } from "./lib/debian-root.js";
import { createTestNet, shInRoot, spawnInRoot, type NetHost, type RootProcess } from "./lib/netns.js";

// Fleet onboarding end to end, all real: the orch-agent .deb/tarball built by `build:agent-package`, a
// debootstrapped Debian bookworm root (no Node.js in it) per host, each host in its own network
// namespace on a bridge, the gateway's one-line install script run there with curl | sh, the agent
// started the way its systemd unit would (a restart loop; no systemd in a chroot), join tokens,
// and upgrades across a selector. Needs root, debootstrap (cached: ORCH_TEST_DEBIAN_ROOT) and
// `npm run build`.
//
// Addresses: both namespaces sit on one bridge, so the test machine is 10.x.y.1 to both and one
// http.public_url serves them; forwarders relay 10.x.y.1:<port> to the services' loopback ports.

const REPO = fileURLToPath(new URL("../../", import.meta.url));
const exec = promisify(execFile);
const pidAlive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const secs = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const timings: string[] = [];
const note = (s: string) => {
  timings.push(s);
  t.comment(s);
};

// Package builds, two installs and two upgrade rounds: longer than .taprc's 300 s on a cold cache.
t.setTimeout(15 * 60_000);
// Not a skip: the suite's onboarding proof needs root (network namespaces, overlayfs, chroot).
if (process.getuid?.() !== 0) {
  t.fail("run as root: this test makes network namespaces, overlay mounts and chroots (README, Tests)");
  process.exit(1);
}

const tStart = Date.now();
// Work dirs of runs killed before their teardown (a timeout) hold ~150 MB of packages each.
for (const d of await readdir(tmpdir())) {
  const m = /^orch-agent-install-(\d+)-/.exec(d);
  if (m && !pidAlive(Number(m[1]))) await rm(join(tmpdir(), d), { recursive: true, force: true });
}
const work = await mkdtemp(join(tmpdir(), `orch-agent-install-${process.pid}-`));
t.teardown(() => rm(work, { recursive: true, force: true }));

// The Debian root: cold = debootstrap ran now, warm = the cache was reused.
const rootT0 = Date.now();
const debian = await ensureDebianRoot({ log: (m) => t.comment(m) });
assertNoNode(debian.dir);
note(
  debian.builtSeconds === undefined
    ? `debian root: warm (cache ${debian.dir}, ${secs(Date.now() - rootT0)})`
    : `debian root: cold, debootstrap took ${debian.builtSeconds.toFixed(1)} s`,
);

// Releases A (agent/package.json's version) and B (next patch), built in parallel by the real CLI.
const A = JSON.parse(await readFile(join(REPO, "agent/package.json"), "utf8")).version as string;
const [maj, min, patch] = A.replace(/-.*/, "").split(".").map(Number) as [number, number, number];
const B = `${maj}.${min}.${patch + 1}`;
const releases = join(work, "releases");
// The release key signs at build; the gateway gets only its public half.
const { privateKey, publicKey } = generateKeyPairSync("ed25519");
const signingKey = join(work, "release-signing.pem");
await writeFile(signingKey, privateKey.export({ type: "pkcs8", format: "pem" }), { mode: 0o600 });
const releasePub = join(work, "release.pub");
await writeFile(releasePub, publicKey.export({ type: "spki", format: "pem" }));
const buildT0 = Date.now();
await Promise.all(
  [A, B].map((v) =>
    exec(
      process.execPath,
      [
        "--conditions=orch-source",
        "--import=tsx",
        "scripts/agent-package/build.ts",
        "--version",
        v,
        "--out",
        releases,
        "--signing-key",
        signingKey,
      ],
      { cwd: REPO, env: process.env, maxBuffer: 16 * 1024 * 1024, timeout: 10 * 60_000 },
    ),
  ),
);
note(`agent packages ${A} and ${B} built and signed in ${secs(Date.now() - buildT0)}`);

const net = await createTestNet(2);
t.teardown(() => net.close());
const gatewayPublicPort = await freePort();
const linkPort = await freePort();
const baseUrl = `http://${net.hostAddr}:${gatewayPublicPort}`;

const nats = await startNats({ owner: t });
const db = await createTestDatabase({ owner: t });
const system = await startSystem({
  owner: t,
  nats,
  db,
  services: ["auth", "audit", "agents", "gateway"],
  env: {
    ORCH_AGENTS_LINK_HOST: "127.0.0.1",
    ORCH_AGENTS_LINK_PORT: String(linkPort),
    ORCH_RELEASES_DIR: releases,
    ORCH_RELEASES_PUBLIC_KEY_FILE: releasePub,
    ORCH_RELEASES_UPGRADE_DEADLINE_SECONDS: "60",
    ORCH_HTTP_PUBLIC_URL: baseUrl,
  },
});
const sql = new pg.Client({ connectionString: db.url });
await sql.connect();
t.teardown(async () => {
  await sql.end();
});
await net.forward(linkPort);
await net.forward(Number(new URL(system.url).port), gatewayPublicPort);

const token = await system.login(system.admin);
const api = (method: string, path: string, body?: unknown) =>
  system.api(method, path, { token, ...(body !== undefined ? { body } : {}) });

// Per host: a writable overlay of the cached root and, once installed, the agent's restart loop.
const overlays: Overlay[] = [];
const supervisors: RootProcess[] = [];
t.teardown(async () => {
  for (const s of supervisors) await s.kill();
  for (const o of overlays) await o.close();
});
const fresh = async () => {
  const o = await overlayRoot(debian.dir);
  overlays.push(o);
  return o.root;
};
const hostname = (h: NetHost) => `deb-host${h.index}`;
const sh = (h: NetHost, root: string, script: string, timeoutMs = 120_000) =>
  shInRoot(h, root, script, { hostname: hostname(h), timeoutMs });
const installLine = (args: string) => `curl -fsSL ${baseUrl}/install/agent.sh | sh -s -- ${args}`;

/** What the systemd unit does (Restart=always, RestartSec=2, EnvironmentFile), as a shell loop. */
const SUPERVISE =
  "while :; do (set -a; . /etc/orch-agent/agent.env; set +a; exec /opt/orch-agent/current/bin/orch-agent); sleep 1; done";
const supervise = (h: NetHost, root: string) => {
  const p = spawnInRoot(h, root, ["/bin/sh", "-c", SUPERVISE], { hostname: hostname(h) });
  supervisors.push(p);
  return p;
};

interface AgentView {
  node_id: string;
  name: string | null;
  status: string;
  connected: boolean;
  version: string;
  tags: Record<string, string>;
  pending_reason?: string;
  attributes: Record<string, string>;
}
const agentOn = async (h: NetHost): Promise<AgentView | undefined> => {
  const r = await api("GET", "/api/v1/agents?limit=100");
  const all = (r.body?.agents ?? []) as AgentView[];
  for (const a of all) {
    const full = a.attributes ? a : (await api("GET", `/api/v1/agents/${a.node_id}`)).body;
    if (full?.attributes?.hostname === hostname(h)) return full as AgentView;
  }
  return undefined;
};
const logsOf = (p: RootProcess) => p.output.join("").slice(-3000);

const [h1, h2] = net.hosts as [NetHost, NetHost];
const roots = new Map<NetHost, string>();
const ids = new Map<NetHost, string>();

t.test("host 1: one-line install with a join token → approved by the token with env=test", async (t) => {
  const created = await api("POST", "/api/v1/join-tokens", { ttl_s: 3600, tags: { env: "test" }, name_prefix: "e2e" });
  t.equal(created.status, 201, "join token created");
  const root = await fresh();
  roots.set(h1, root);
  const t0 = Date.now();
  const inst = await sh(h1, root, installLine(`--token ${created.body.token} --version ${A}`));
  t.equal(inst.code, 0, "the install script exits 0");
  if (inst.code !== 0) t.comment(inst.out);
  t.notMatch(inst.out, created.body.token, "the script never prints the token");
  note(`install on host 1 (curl | sh, dpkg -i): ${secs(Date.now() - t0)}`);

  const files = await sh(h1, root, "dpkg -L orch-agent");
  t.equal(files.code, 0, "dpkg -L orch-agent");
  for (const p of [
    `/opt/orch-agent/releases/${A}/bin/orch-agent`,
    `/opt/orch-agent/releases/${A}/node/bin/node`,
    `/opt/orch-agent/releases/${A}/lib/orch-agent.mjs`,
    "/lib/systemd/system/orch-agent.service",
    "/usr/bin/orch-agent",
  ])
    t.match(files.out, p, `dpkg -L lists ${p}`);
  t.not((await sh(h1, root, "command -v node")).code, 0, "no node on the PATH in the root");
  assertNoNode(root);
  const version = await sh(h1, root, "orch-agent --version");
  t.match(version.out, `orch-agent ${A} (node v`, version.out.trim());
  const env = await sh(h1, root, "cat /etc/orch-agent/agent.env; stat -c %a /etc/orch-agent/agent.env");
  t.match(env.out, `ORCH_AGENT_SERVER=${net.hostAddr}:${linkPort}`);
  t.match(env.out, /ORCH_AGENT_SERVER_FINGERPRINT=sha256:[0-9a-f]{64}/);
  t.match(env.out, /\n600\n$/, "agent.env is 0600 (it holds the token)");

  const s0 = Date.now();
  const sup = supervise(h1, root);
  const a = await eventually(async () => {
    const v = await agentOn(h1);
    return v?.status === "approved" && v.connected ? v : undefined;
  }, 20_000).catch((err) => {
    t.comment(logsOf(sup));
    throw err;
  });
  const took = Date.now() - s0;
  note(`host 1: agent start → approved and connected: ${secs(took)}`);
  // Approved by its join token when it connected, not by anyone's hand: the audit names the token.
  const approval = await eventually(async () => {
    const r = await api("GET", "/api/v1/audit?event_type=agent.approved&limit=100");
    return (r.body?.events as Array<Record<string, any>> | undefined)?.find((e) => e.target?.id === a.node_id);
  }, 10_000);
  t.equal(approval.metadata?.join_token_id, created.body.join_token.id, "approved by the join token");
  t.equal(approval.metadata?.previous_status, "pending", "at its first connection, from pending");
  t.same(a.tags, { env: "test" }, "the token's tags");
  t.match(a.name, /^e2e-deb-host1/, "name from the token's prefix and the hostname");
  t.equal(a.version, A, `reports version ${A}`);
  ids.set(h1, a.node_id);
});

t.test("host 2: an expired token leaves the agent pending (join_token_expired); then approved by hand", async (t) => {
  const created = await api("POST", "/api/v1/join-tokens", { ttl_s: 60, tags: { env: "test" } });
  t.equal(created.status, 201, "join token created");
  // Expire it now rather than wait a minute.
  await sql.query("UPDATE agents.join_tokens SET expires_at = $2 WHERE id = $1", [
    created.body.join_token.id,
    Date.now() - 1000,
  ]);
  const root = await fresh();
  roots.set(h2, root);
  const inst = await sh(h2, root, installLine(`--token ${created.body.token} --version ${A}`));
  t.equal(inst.code, 0, "the install itself succeeds");
  if (inst.code !== 0) t.comment(inst.out);
  const sup = supervise(h2, root);
  const a = await eventually(async () => {
    const v = await agentOn(h2);
    return v?.connected ? v : undefined;
  }, 20_000).catch((err) => {
    t.comment(logsOf(sup));
    throw err;
  });
  t.equal(a.status, "pending", "connected but pending");
  t.equal(a.pending_reason, "join_token_expired", "pending_reason join_token_expired");
  ids.set(h2, a.node_id);
  const ok = await api("POST", `/api/v1/agents/${a.node_id}`, { status: "approved", name: "deb-host2" });
  t.equal(ok.status, 200, "approved by hand");
  t.equal((await api("PUT", `/api/v1/agents/${a.node_id}/tags/env`, { value: "test" })).status, 200, "tagged env=test");
});

/** Waits for each agent's latest upgrade to leave "requested"; returns them by node id. */
const settled = async (nodeIds: string[], timeoutMs: number) => {
  const out = new Map<string, { status: string; reason: string; to_version: string }>();
  await eventually(async () => {
    for (const id of nodeIds) {
      const r = await api("GET", `/api/v1/agent-upgrades?node_id=${id}&limit=1`);
      const u = r.body?.upgrades?.[0];
      if (!u || u.status === "requested") return undefined;
      out.set(id, u);
    }
    return true;
  }, timeoutMs);
  return out;
};

/** Flips one byte in the middle of each of B's package files; returns a restore function. */
async function tamper(version: string): Promise<() => Promise<void>> {
  const files = [debFileName(version, "amd64"), tarFileName(version, "amd64")].map((f) => join(releases, version, f));
  for (const f of files) {
    await copyFile(f, `${f}.orig`);
    const bytes = await readFile(f);
    const i = Math.floor(bytes.length / 2);
    bytes[i] = bytes[i]! ^ 0xff;
    await writeFile(f, bytes);
  }
  return async () => {
    for (const f of files) await copyFile(`${f}.orig`, f);
    for (const f of files) await rm(`${f}.orig`);
  };
}

t.test("a tampered B: both agents refuse (checksum_mismatch) and stay on A; the script refuses too", async (t) => {
  const both = [ids.get(h1)!, ids.get(h2)!];
  if (!both.every(Boolean)) return t.fail("both agents must have joined first");
  const restore = await tamper(B);
  try {
    const r = await api("POST", "/api/v1/agent-upgrades", { selector: "env=test", version: B });
    t.equal(r.status, 202, `POST /agent-upgrades {selector: env=test, version: ${B}} → 202`);
    t.equal(r.body.upgrades?.length, 2, "one upgrade per agent");
    const done = await settled(both, 60_000);
    for (const id of both) {
      t.match(done.get(id), { status: "failed", reason: "checksum_mismatch" }, `${id} refused`);
      t.match((await api("GET", `/api/v1/agents/${id}`)).body, { version: A, connected: true }, `${id} still on ${A}`);
    }
    for (const h of [h1, h2]) {
      const v = await sh(h, roots.get(h)!, "readlink /opt/orch-agent/current; ls /opt/orch-agent/releases");
      t.match(v.out, `releases/${A}`, `host ${h.index}: current still points at ${A}`);
    }

    // The install script against the tampered package, in a fresh root: refused, nothing installed.
    const root = await fresh();
    const inst = await sh(h1, root, installLine(`--version ${B}`));
    t.not(inst.code, 0, "the script exits non-zero");
    t.match(inst.out, /checksum mismatch/, "and says why");
    t.not((await sh(h1, root, "dpkg -s orch-agent")).code, 0, "dpkg -s orch-agent fails: not installed");
    t.notOk(existsSync(join(root, "opt/orch-agent")), "no /opt/orch-agent");
    t.notOk(existsSync(join(root, "etc/orch-agent/agent.env")), "no agent.env");
  } finally {
    await restore();
  }
});

t.test("upgrade A → B across the selector: both reconnect on B", async (t) => {
  const both = [ids.get(h1)!, ids.get(h2)!];
  if (!both.every(Boolean)) return t.fail("both agents must have joined first");
  const t0 = Date.now();
  const r = await api("POST", "/api/v1/agent-upgrades", { selector: "env=test", version: B });
  t.equal(r.status, 202, `POST /agent-upgrades {selector: env=test, version: ${B}} → 202`);
  t.equal(r.body.upgrades?.length, 2, "one upgrade per agent");
  const done = await settled(both, 90_000).catch((err) => {
    for (const s of supervisors) t.comment(logsOf(s));
    throw err;
  });
  for (const id of both) {
    t.match(done.get(id), { status: "succeeded", to_version: B }, `${id} upgraded`);
    t.match((await api("GET", `/api/v1/agents/${id}`)).body, { version: B, connected: true }, `${id} reports ${B}`);
  }
  note(`upgrade ${A} → ${B} of 2 agents: ${secs(Date.now() - t0)}`);
  const v = await sh(h1, roots.get(h1)!, "readlink /opt/orch-agent/current; orch-agent --version");
  t.match(v.out, `releases/${B}`, `current -> releases/${B}`);
  t.match(v.out, `orch-agent ${B}`, `orch-agent --version: ${B}`);
  const unknown = await api("POST", "/api/v1/agent-upgrades", { selector: "env=test", version: "9.9.9" });
  t.match(unknown, { status: 404, body: { code: "agent_version_not_found" } }, "an unknown version → 404");
});

t.test("timings", async (t) => {
  note(`total: ${secs(Date.now() - tStart)}`);
  t.pass(timings.join("; "));
});
