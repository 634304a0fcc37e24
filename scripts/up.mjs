#!/usr/bin/env node
// `npm run up [-- --agents N] [-- --no-build] [-- --insecure-bus]`: the whole system from a fresh
// clone. Installs and builds, starts NATS with every service's own bus user (or checks the one at
// NATS_URL), finds Postgres (starting a local one when none answers), creates the
// database, a bootstrap admin key, dev keys (secrets, channel credentials, git sources) and a
// development CA for the agent link (.orch/tls) on first run, starts every service (and N
// local agents) as supervised processes, and prints how to log in; then builds the orch-agent
// package in the background when none was built from the current inputs. On a system Node older
// than .node-version it first re-runs itself on the pinned one. Ctrl-C stops everything.
import { spawn, spawnSync } from "node:child_process";
import { createPrivateKey, createPublicKey, generateKeyPairSync, randomBytes, sign } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { onPinnedNode } from "./lib/pinned-node.mjs";
import { agentPackagePlan, buildAgentPackageInBackground } from "./lib/up-agent-package.mjs";
import { freePort, portOpen } from "./lib/port-open.mjs";
import { shownPath, statePath, upStateDir } from "./lib/up-state.mjs";
import { chooseDatabase, DEFAULT_DATABASE } from "./lib/up-database.mjs";

// On Debian's Node 20 (older than .node-version): the same command again on the pinned Node.
await onPinnedNode();

const ROOT = new URL("..", import.meta.url).pathname;
// ORCH_UP_STATE_DIR lets a second stack (e.g. the README walkthrough test) keep its keys apart;
// every message names the files where they are (`state("admin.key")`).
const STATE = upStateDir();
const state = (file) => statePath(STATE, file);
const { values: args } = parseArgs({
  options: {
    agents: { type: "string", default: "0" },
    "no-build": { type: "boolean", default: false },
    "no-install": { type: "boolean", default: false },
    // An open bus (no users, no permissions) for debugging with e.g. `nats sub '>'`.
    "insecure-bus": { type: "boolean", default: false },
  },
  allowPositionals: true,
});

const colors = [36, 32, 33, 35, 34, 91, 92, 93, 94, 95, 96];
const say = (msg) => process.stdout.write(`\x1b[1m[up]\x1b[0m ${msg}\n`);
const fail = (msg) => {
  process.stderr.write(`\x1b[31m[up] ${msg}\x1b[0m\n`);
  process.exit(1);
};

function run(cmd, argv, opts = {}) {
  const r = spawnSync(cmd, argv, { cwd: ROOT, stdio: "inherit", ...opts });
  if (r.status !== 0) fail(`${cmd} ${argv.join(" ")} failed (exit ${r.status})`);
}

async function waitPort(host, port, timeoutMs) {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    if (await portOpen(host, port)) return true;
    await new Promise((r) => setTimeout(r, 200));
  }
  return false;
}

const which = (bin) => spawnSync("sh", ["-c", `command -v ${bin}`], { encoding: "utf8" }).stdout.trim();
const children = [];
let stopping = false;

/** Starts a process, prefixes its output, restarts it with backoff if it dies while we run. */
function supervise(name, cmd, argv, env, i) {
  const color = colors[i % colors.length];
  const tag = `\x1b[${color}m${name.padEnd(10)}\x1b[0m|`;
  const entry = { name, child: undefined, restarts: 0 };
  const start = () => {
    const child = spawn(cmd, argv, { cwd: ROOT, env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] });
    entry.child = child;
    const pipe = (stream, out) => {
      let buf = "";
      stream.on("data", (d) => {
        buf += d.toString();
        const lines = buf.split("\n");
        buf = lines.pop();
        for (const l of lines) out.write(`${tag} ${l}\n`);
      });
    };
    pipe(child.stdout, process.stdout);
    pipe(child.stderr, process.stderr);
    const startedAt = Date.now();
    child.on("exit", (code, signal) => {
      if (stopping) return;
      if (Date.now() - startedAt > 30_000) entry.restarts = 0;
      entry.restarts++;
      const delay = Math.min(500 * 2 ** entry.restarts, 15_000);
      process.stderr.write(`${tag} exited (${signal ?? code}); restarting in ${delay} ms\n`);
      setTimeout(() => !stopping && start(), delay);
    });
  };
  start();
  children.push(entry);
  return entry;
}

async function stopAll() {
  if (stopping) return;
  stopping = true;
  say("stopping…");
  const exits = children.map(
    (c) =>
      new Promise((resolve) => {
        if (!c.child || c.child.exitCode !== null || c.child.signalCode !== null) return resolve();
        c.child.once("exit", resolve);
        c.child.kill("SIGTERM");
        setTimeout(() => {
          c.child.kill("SIGKILL");
          resolve();
        }, 15_000).unref();
      }),
  );
  await Promise.all(exits);
  say("stopped");
  process.exit(0);
}
process.on("SIGINT", stopAll);
process.on("SIGTERM", stopAll);

// 0. The system tools this needs (nats-server/Postgres unless they already answer): says how to install them.
{
  const r = spawnSync(
    process.execPath,
    [join(ROOT, "scripts/preflight.mjs"), "up", ...(args["insecure-bus"] ? ["--insecure-bus"] : [])],
    { stdio: "inherit" },
  );
  if (r.status !== 0) process.exit(r.status ?? 1);
}

// 1. Install and build.
if (!args["no-install"] && !existsSync(join(ROOT, "node_modules/.package-lock.json"))) {
  say("installing dependencies (npm ci)…");
  run("npm", ["ci", "--no-audit", "--no-fund"]);
}
if (!args["no-build"]) {
  say("building…");
  run("npm", ["run", "build", "--silent"]);
}
mkdirSync(STATE, { recursive: true, mode: 0o700 });

// 2. NATS with JetStream. Every service connects as its own bus user with the deployment's
// permissions (deploy/nats/permissions.mjs), so no other local process can, say, request
// orch.secrets.Resolve: up starts its own nats-server with them (random passwords in .orch/bus),
// or uses the one at an explicit NATS_URL after checking that it refuses anonymous clients and
// accepts those passwords. An open bus only with --insecure-bus, for debugging.
const busDir = join(STATE, "bus");
const busCredentialsFile = join(busDir, "credentials.json");
const busConfFile = join(busDir, "nats.conf");
const natsBin = () => which("nats-server") || (existsSync("/usr/sbin/nats-server") ? "/usr/sbin/nats-server" : "");
/** Starts a supervised local nats-server on `port` (with `conf`, when given) and waits for it. */
async function startLocalNats(port, conf) {
  const bin = natsBin();
  if (!bin) fail("nats-server is not installed (apt-get install nats-server)");
  const argv = [
    "-a",
    "127.0.0.1",
    "-p",
    String(port),
    "-js",
    "-sd",
    join(STATE, "nats"),
    ...(conf ? ["-c", conf] : []),
  ];
  supervise("nats", bin, argv, {}, 0);
  if (!(await waitPort("127.0.0.1", port, 10_000))) fail("nats-server did not start");
}
const { connect: natsConnect } = await import("@nats-io/transport-node");
/** How the bus at `url` answers a client with these credentials: "ok", "refused" (authorization) or another error. */
async function busAnswer(url, creds) {
  try {
    const nc = await natsConnect({ servers: url.split(","), reconnect: false, timeout: 5000, ...creds });
    await nc.close();
    return "ok";
  } catch (err) {
    return /Authorization Violation|Authentication/i.test(String(err?.message)) ? "refused" : String(err?.message);
  }
}

let natsUrl;
let busEnv; // per service: ORCH_NATS_USER / ORCH_NATS_PASSWORD
let busSummary;
if (args["insecure-bus"]) {
  natsUrl = process.env.NATS_URL || "nats://127.0.0.1:4222";
  const nu = new URL(natsUrl.split(",")[0].replace(/^nats:/, "http:"));
  const natsPort = Number(nu.port || 4222);
  if (await portOpen(nu.hostname, natsPort)) {
    say(`NATS answers at ${natsUrl}`);
  } else {
    if (!["127.0.0.1", "localhost"].includes(nu.hostname)) fail(`NATS at ${natsUrl} does not answer`);
    say(`starting a local nats-server with JetStream on :${natsPort} (store in ${state("nats")}), WITHOUT users`);
    await startLocalNats(natsPort);
  }
  // Blank, not absent: an ORCH_NATS_USER in the caller's environment must not reach the services.
  busEnv = () => ({ ORCH_NATS_USER: "", ORCH_NATS_PASSWORD: "" });
  const bar = "!".repeat(78);
  process.stderr.write(
    `\x1b[1;31m${bar}\n[up] WARNING: --insecure-bus: NATS at ${natsUrl} has NO users or permissions.\n` +
      "[up] Any process on this machine can call orch.secrets.Resolve and read every secret in full,\n" +
      "[up] forge audit events and impersonate any service. Debugging only; never with real secrets.\n" +
      `${bar}\x1b[0m\n`,
  );
  busSummary = `\x1b[1;31mOPEN (--insecure-bus)\x1b[0m ${natsUrl}: any local process may read every secret`;
} else {
  const { randomPasswords, renderDevConf } = await import("../deploy/nats/generate.mjs");
  const { z } = await import("zod");
  mkdirSync(busDir, { recursive: true, mode: 0o700 });
  chmodSync(busDir, 0o700);
  // Kept across runs (a server started by hand with .orch/bus/nats.conf keeps working); a user
  // added to permissions.mjs gets a password on the next run.
  let kept = {};
  if (existsSync(busCredentialsFile)) {
    let json;
    try {
      json = JSON.parse(readFileSync(busCredentialsFile, "utf8"));
    } catch {}
    const parsed = z.record(z.string(), z.string().min(16)).safeParse(json);
    if (!parsed.success)
      fail(`${busCredentialsFile} is not {"<service>": "<password>", ...}: delete it to start afresh`);
    kept = parsed.data;
  }
  const passwords = randomPasswords(kept);
  writeFileSync(busCredentialsFile, `${JSON.stringify(passwords, null, 2)}\n`, { mode: 0o600 });
  chmodSync(busCredentialsFile, 0o600);
  // Rendered on every run, so a change to permissions.mjs reaches the next `npm run up`.
  writeFileSync(busConfFile, renderDevConf(passwords), { mode: 0o600 });
  chmodSync(busConfFile, 0o600);
  busEnv = (s) => {
    if (!passwords[s]) fail(`service ${s} has no bus user: add it to deploy/nats/permissions.mjs`);
    return { ORCH_NATS_USER: s, ORCH_NATS_PASSWORD: passwords[s] };
  };
  if (process.env.NATS_URL) {
    natsUrl = process.env.NATS_URL;
    const nu = new URL(natsUrl.split(",")[0].replace(/^nats:/, "http:"));
    const natsPort = Number(nu.port || 4222);
    if (await portOpen(nu.hostname, natsPort)) {
      say(`NATS answers at ${natsUrl}: checking that it runs the bus users of ${state("bus/nats.conf")}`);
    } else {
      if (!["127.0.0.1", "localhost"].includes(nu.hostname)) fail(`NATS at ${natsUrl} does not answer`);
      say(`starting a local nats-server with JetStream and the bus users on :${natsPort} (store in ${state("nats")})`);
      await startLocalNats(natsPort, busConfFile);
    }
  } else {
    // Its own port: whatever answers on 4222 (often an open server) is never used by accident.
    const port = await freePort();
    natsUrl = `nats://127.0.0.1:${port}`;
    say(`starting a local nats-server with JetStream and the bus users on :${port} (store in ${state("nats")})`);
    await startLocalNats(port, busConfFile);
  }
  const anonymous = await busAnswer(natsUrl, {});
  if (anonymous === "ok")
    fail(
      `NATS at ${natsUrl} accepts clients without credentials. Start it with the bus users ` +
        `(nats-server -c ${shownPath(busConfFile)} -js), unset NATS_URL to let up start its own, ` +
        "or pass --insecure-bus to use an open bus (debugging only)",
    );
  // nats-server logs the refused probe as an [ERR]: say it was ours, so nobody goes looking for it.
  say(
    'checked: NATS refuses clients without credentials (its log shows that probe as one "authentication error - User \\"\\"")',
  );
  const gateway = await busAnswer(natsUrl, { user: "gateway", pass: passwords.gateway });
  if (gateway !== "ok")
    fail(
      `NATS at ${natsUrl} refuses the bus user gateway (${gateway}): start it with ` +
        `nats-server -c ${shownPath(busConfFile)} -js, or unset NATS_URL to let up start its own`,
    );
  busSummary = `${natsUrl}, one user per service (deploy/nats/permissions.mjs; passwords in ${shownPath(busCredentialsFile)})`;
}

// 3. Postgres.
let dbUrl = process.env.DATABASE_URL ?? `postgres://postgres@127.0.0.1:5432/${DEFAULT_DATABASE}`;
const du = new URL(dbUrl);
const pgPort = Number(du.port || 5432);
if (!(await portOpen(du.hostname, pgPort))) {
  if (!["127.0.0.1", "localhost"].includes(du.hostname)) fail(`Postgres at ${du.hostname}:${pgPort} does not answer`);
  const clusters = existsSync("/etc/postgresql") ? readdirSync("/etc/postgresql") : [];
  if (clusters.length && which("pg_ctlcluster")) {
    say(`starting the system Postgres cluster ${clusters[0]}/main`);
    spawnSync("pg_ctlcluster", ["--skip-systemctl-redirect", clusters[0], "main", "start"], { stdio: "inherit" });
  }
  if (!(await waitPort("127.0.0.1", pgPort, 10_000))) {
    const bin = [
      which("postgres"),
      ...readdirSync("/usr/lib/postgresql").map((v) => `/usr/lib/postgresql/${v}/bin/postgres`),
    ].find((p) => p && existsSync(p));
    if (!bin) fail("no Postgres answers and none is installed (apt-get install postgresql)");
    const dir = join(STATE, "pg");
    if (!existsSync(join(dir, "PG_VERSION"))) {
      say(`initialising a local Postgres in ${state("pg")}`);
      run(join(bin, "../initdb"), ["-D", dir, "-U", "postgres", "--auth=trust"], { stdio: "ignore" });
    }
    say(`starting a local Postgres on :${pgPort}`);
    supervise("postgres", bin, ["-D", dir, "-p", String(pgPort), "-k", dir, "-c", "listen_addresses=127.0.0.1"], {}, 1);
    if (!(await waitPort("127.0.0.1", pgPort, 20_000))) fail("Postgres did not start");
  }
}
const { default: pg } = await import("pg");
{
  const admin = new URL(dbUrl);
  admin.pathname = "/postgres";
  const c = new pg.Client({ connectionString: admin.toString() });
  await c.connect().catch((e) => fail(`cannot connect to Postgres: ${e.message}`));
  let name = du.pathname.slice(1) || DEFAULT_DATABASE;
  if (!process.env.DATABASE_URL) {
    name = await databaseOfThisCheckout(pg, c, admin);
    du.pathname = `/${name}`;
    dbUrl = du.toString();
  }
  const r = await c.query("SELECT 1 FROM pg_database WHERE datname = $1", [name]);
  if (!r.rowCount) {
    await c.query(`CREATE DATABASE "${name.replace(/"/g, '""')}"`);
    say(`created database ${name}`);
  }
  await c.end();
  say(`Postgres ready: ${du.hostname}:${pgPort}/${name}`);
}

/**
 * The database this checkout's stack uses (scripts/lib/up-database.mjs): recorded in the state dir,
 * so later runs keep it. A new checkout finding the default one set up by another takes its own.
 */
async function databaseOfThisCheckout(pg, c, admin) {
  const recordFile = join(STATE, "database");
  const recorded = existsSync(recordFile) ? readFileSync(recordFile, "utf8").trim() : undefined;
  const freshState = !existsSync(join(STATE, "admin.key"));
  let defaultTaken = false;
  if (!recorded && freshState) {
    const exists = await c.query("SELECT 1 FROM pg_database WHERE datname = $1", [DEFAULT_DATABASE]);
    if (exists.rowCount) {
      const url = new URL(admin.toString());
      url.pathname = `/${DEFAULT_DATABASE}`;
      const d = new pg.Client({ connectionString: url.toString() });
      await d.connect();
      const ops = await d.query("SELECT count(*)::int AS n FROM auth.operators").then(
        (r) => r.rows[0].n,
        () => 0,
      );
      await d.end();
      defaultTaken = ops > 0;
    }
  }
  const { name, own } = chooseDatabase({ recorded, freshState, defaultTaken, stateDir: STATE });
  if (own && !recorded)
    say(
      `database ${DEFAULT_DATABASE} belongs to another checkout (its operators and secrets are that checkout's keys): this one uses ${name}`,
    );
  writeFileSync(recordFile, `${name}\n`);
  return name;
}

// 4. Bootstrap admin key and dev secrets key (first run only).
const keyPath = join(STATE, "admin.key");
if (!existsSync(keyPath)) {
  const { privateKey, publicKey } = generateKeyPairSync("ed25519");
  writeFileSync(keyPath, privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
  const der = publicKey.export({ format: "der", type: "spki" });
  writeFileSync(`${keyPath}.pub`, `${der.subarray(der.length - 32).toString("hex")}\n`, { mode: 0o644 });
  say(`created the bootstrap admin key ${shownPath(keyPath)}`);
}
chmodSync(keyPath, 0o600);
const adminPub = readFileSync(`${keyPath}.pub`, "utf8").trim();
let secretsKeys = process.env.ORCH_SECRETS_KEYS;
if (!secretsKeys) {
  const p = join(STATE, "secrets.keys");
  if (!existsSync(p)) writeFileSync(p, `dev1:${randomBytes(32).toString("base64")}\n`, { mode: 0o600 });
  secretsKeys = readFileSync(p, "utf8").trim();
  say(
    `ORCH_SECRETS_KEYS is not set: using the generated DEVELOPMENT key in ${shownPath(p)} (set ORCH_SECRETS_KEYS in production)`,
  );
}
// Channel credentials are always encrypted: notify does not start without a key.
let notifyKeys = process.env.ORCH_NOTIFY_CREDENTIALS_KEYS;
if (!notifyKeys) {
  const p = join(STATE, "notify-credentials.keys");
  if (!existsSync(p)) writeFileSync(p, `dev1:${randomBytes(32).toString("base64")}\n`, { mode: 0o600 });
  notifyKeys = readFileSync(p, "utf8").trim();
  say(
    `ORCH_NOTIFY_CREDENTIALS_KEYS is not set: using the generated DEVELOPMENT key in ${shownPath(p)} (set ORCH_NOTIFY_CREDENTIALS_KEYS in production)`,
  );
}
// Single sign-on seals client secrets and refresh tokens; without a key adding a provider is refused.
let ssoKeys = process.env.ORCH_AUTH_SSO_KEYS;
if (!ssoKeys) {
  const p = join(STATE, "auth-sso.keys");
  if (!existsSync(p)) writeFileSync(p, `dev1:${randomBytes(32).toString("base64")}\n`, { mode: 0o600 });
  ssoKeys = readFileSync(p, "utf8").trim();
  say(
    `ORCH_AUTH_SSO_KEYS is not set: using the generated DEVELOPMENT key in ${shownPath(p)} (set ORCH_AUTH_SSO_KEYS in production)`,
  );
}
// Git sources seal their credentials and webhook secrets; without a key creating a source is refused.
let sourceKeys = process.env.ORCH_STATE_SOURCE_KEYS;
if (!sourceKeys) {
  const p = join(STATE, "source.keys");
  if (!existsSync(p)) writeFileSync(p, `dev1:${randomBytes(32).toString("base64")}\n`, { mode: 0o600 });
  sourceKeys = readFileSync(p, "utf8").trim();
  say(
    `ORCH_STATE_SOURCE_KEYS is not set: using the generated DEVELOPMENT key in ${shownPath(p)} (set ORCH_STATE_SOURCE_KEYS in production)`,
  );
}
// A local checkout is the quickest source to try (file:///path/to/repo); a deployment keeps them off.
const allowFileSources = process.env.ORCH_STATE_SOURCES_ALLOW_FILE_URLS ?? "true";
if (/^(1|true)$/i.test(allowFileSources)) {
  say("git sources may use file:// URLs (DEVELOPMENT: ORCH_STATE_SOURCES_ALLOW_FILE_URLS=true; docs/sources.md)");
}

// Development sends notifications to local receivers (a webhook on 127.0.0.1, a LAN ntfy); a
// deployment keeps notify.allow_private_targets off so channels cannot reach internal addresses.
const allowPrivateTargets = process.env.ORCH_NOTIFY_ALLOW_PRIVATE_TARGETS ?? "true";
const privateTargetsAllowed = /^(1|true|yes|on)$/i.test(allowPrivateTargets);

// The agent link's TLS identity: a development CA (first run) and a server certificate it issues,
// so the link is authenticated from the start. Local agents trust the CA (--ca); agents elsewhere
// take the CA file or pin its fingerprint. Given files or ORCH_AGENTS_INSECURE win.
let linkEnv = {};
let agentTrust = [];
let linkSummary;
if (process.env.ORCH_AGENTS_TLS_CERT || /^(1|true)$/i.test(process.env.ORCH_AGENTS_INSECURE ?? "")) {
  if (!process.env.ORCH_AGENTS_TLS_CERT) agentTrust = ["--insecure"];
  const given = process.env.ORCH_AGENTS_TLS_CERT;
  linkSummary = given ? `TLS with ${given}` : "PLAINTEXT (ORCH_AGENTS_INSECURE)";
} else {
  const { ensureDevCa } = await import(new URL("../packages/kit/dist/testing/dev-ca.js", import.meta.url).href);
  let ca;
  try {
    ca = ensureDevCa(join(STATE, "tls"));
  } catch (err) {
    fail(`cannot create the development CA for the agent link: ${err.message}`);
  }
  if (ca.created.includes("ca")) {
    say(`created the DEVELOPMENT CA ${shownPath(ca.caCert)} for the agent link (production: docs/deploy.md)`);
  }
  if (ca.created.includes("server")) {
    say(`issued the agent link certificate ${shownPath(ca.serverCert)} (full chain; key ${shownPath(ca.serverKey)})`);
  }
  linkEnv = { ORCH_AGENTS_TLS_CERT: ca.serverCert, ORCH_AGENTS_TLS_KEY: ca.serverKey };
  agentTrust = ["--ca", ca.caCert];
  linkSummary =
    `TLS, development CA ${shownPath(ca.caCert)} ` +
    `(agents elsewhere: --ca ca.crt or --server-fingerprint ${ca.caFingerprint})`;
}

// orch-agent packages: the gateway serves dist/agent-releases under /install. `npm run
// build:agent-package` signs each manifest with .orch/release.key; the gateway gets only the public
// key .orch/release.pub and serves a release only when its signature verifies (docs/agent-install.md).
// Passed even before the directory exists: the gateway and the agents service re-read it, so
// packages built later are served without restarting.
let releasePub = process.env.ORCH_RELEASES_PUBLIC_KEY_FILE;
// The private key up builds the package with (below); none when the public key is someone else's.
let releaseSigningKey;
if (!releasePub) {
  const releaseKey = join(STATE, "release.key");
  releaseSigningKey = releaseKey;
  if (!existsSync(releaseKey)) {
    const { privateKey } = generateKeyPairSync("ed25519");
    writeFileSync(releaseKey, privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
    say(`created the DEVELOPMENT release signing key ${shownPath(releaseKey)} (build:agent-package signs with it)`);
  }
  chmodSync(releaseKey, 0o600);
  releasePub = join(STATE, "release.pub");
  writeFileSync(
    releasePub,
    createPublicKey(createPrivateKey(readFileSync(releaseKey))).export({ format: "pem", type: "spki" }),
  );
}
const releasesDir = process.env.ORCH_RELEASES_DIR || join(ROOT, "dist/agent-releases");
const haveReleases =
  existsSync(releasesDir) && readdirSync(releasesDir).some((v) => existsSync(join(releasesDir, v, "manifest.json")));
// Built in the background once the banner is out (6.), unless --no-build or the key is not up's.
const agentPackage =
  !args["no-build"] && releaseSigningKey
    ? agentPackagePlan({ root: ROOT, stateDir: STATE, releasesDir, publicKeyFile: releasePub })
    : { build: false };

// 5. Services, then agents.
const httpPort = Number(process.env.ORCH_HTTP_PORT ?? 8080);
// The console's passkeys need a host name, not an IP (browsers refuse IP addresses as WebAuthn
// RP IDs); localhost is one, and a secure context without TLS.
const publicUrl = process.env.ORCH_HTTP_PUBLIC_URL || `http://localhost:${httpPort}`;
const services = readdirSync(join(ROOT, "services")).filter((s) =>
  existsSync(join(ROOT, "services", s, "dist/main.js")),
);
const env = {
  NATS_URL: natsUrl,
  DATABASE_URL: dbUrl,
  ORCH_HTTP_PORT: String(httpPort),
  ORCH_HTTP_PUBLIC_URL: publicUrl,
  ORCH_BOOTSTRAP_ADMIN_KEY: process.env.ORCH_BOOTSTRAP_ADMIN_KEY ?? adminPub,
  ORCH_SECRETS_KEYS: secretsKeys,
  ORCH_NOTIFY_CREDENTIALS_KEYS: notifyKeys,
  ORCH_STATE_SOURCE_KEYS: sourceKeys,
  ORCH_AUTH_SSO_KEYS: ssoKeys,
  ORCH_STATE_SOURCES_ALLOW_FILE_URLS: allowFileSources,
  ORCH_NOTIFY_ALLOW_PRIVATE_TARGETS: allowPrivateTargets,
  ORCH_HEALTH_PORT: process.env.ORCH_HEALTH_PORT ?? "0",
  ORCH_HEALTH_HOST: "127.0.0.1",
  ORCH_GATEWAY_SERVICES: JSON.stringify(services.filter((s) => s !== "gateway")),
  ORCH_TERMINAL_TRANSCRIPT_DIR: process.env.ORCH_TERMINAL_TRANSCRIPT_DIR ?? join(STATE, "transcripts"),
  ORCH_RELEASES_DIR: releasesDir,
  ORCH_RELEASES_PUBLIC_KEY_FILE: releasePub,
  ...linkEnv,
};
// The heap flags of the processes terminal output crosses, from the built kit (built above).
const { nodeFlagsFor } = await import(new URL("../packages/kit/dist/bulk-gc.js", import.meta.url).href);
for (const [i, s] of services.entries())
  supervise(
    s,
    process.execPath,
    [...nodeFlagsFor(s), join(ROOT, "services", s, "dist/main.js")],
    { ...env, ...busEnv(s) },
    i + 2,
  );

const base = `http://127.0.0.1:${httpPort}`;
const until = Date.now() + 60_000;
let status;
while (Date.now() < until) {
  status = await fetch(`${base}/api/v1/status`, { signal: AbortSignal.timeout(2000) })
    .then((r) => r.json())
    .catch(() => undefined);
  if (status?.status === "ok") break;
  await new Promise((r) => setTimeout(r, 500));
}
if (status?.status !== "ok") {
  say(`some services are not ready yet: ${JSON.stringify(status?.services ?? {})}`);
}

/**
 * The local agents all report this machine's hostname, so up tells them apart by name: it makes
 * each agent's identity key itself (the agent keeps an existing agent.key) to know its node id,
 * then approves it as agent-<i>.
 */
async function agentNodeId(dataDir) {
  mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const path = join(dataDir, "agent.key");
  if (!existsSync(path)) {
    const { privateKey } = generateKeyPairSync("ed25519");
    writeFileSync(path, privateKey.export({ format: "pem", type: "pkcs8" }), { mode: 0o600 });
  }
  const der = createPublicKey(createPrivateKey(readFileSync(path))).export({ format: "der", type: "spki" });
  // The agent's own rule, from the built contracts package (built above).
  const { nodeIdFromPublicKey } = await import(join(ROOT, "packages/contracts/dist/index.js"));
  return nodeIdFromPublicKey(der.subarray(der.length - 32));
}

async function api(method, path, token, body) {
  const res = await fetch(`${base}${path}`, {
    method,
    headers: {
      ...(body === undefined ? {} : { "content-type": "application/json" }),
      ...(token ? { authorization: `Bearer ${token}` } : {}),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(5000),
  });
  const json = await res.json().catch(() => ({}));
  return { status: res.status, json };
}

/** Logs in with the bootstrap admin key and approves each pending local agent as agent-<i>. */
async function approveLocalAgents() {
  if (process.env.ORCH_BOOTSTRAP_ADMIN_KEY && process.env.ORCH_BOOTSTRAP_ADMIN_KEY !== adminPub) {
    say(
      `ORCH_BOOTSTRAP_ADMIN_KEY is not ${shownPath(keyPath)}: approve the local agents yourself (npx orchctl agents list)`,
    );
    return;
  }
  const key = createPrivateKey(readFileSync(keyPath));
  const ch = await api("POST", "/api/v1/auth/challenge", undefined, { public_key: adminPub }).catch(() => undefined);
  const nonce = ch?.json?.nonce;
  const signature = nonce && sign(null, Buffer.from(nonce, "hex"), key).toString("hex");
  const v = nonce && (await api("POST", "/api/v1/auth/verify", undefined, { public_key: adminPub, nonce, signature }));
  const token = v?.json?.token;
  if (!token) {
    say(
      `could not log in to approve the local agents (${v?.status ?? ch?.status ?? "no answer"}); approve them yourself`,
    );
    return;
  }
  for (const a of localAgents) {
    const until = Date.now() + 30_000;
    let seen;
    while (Date.now() < until) {
      seen = await api("GET", `/api/v1/agents/${a.nodeId}`, token).catch(() => undefined);
      if (seen?.status === 200) break;
      await new Promise((r) => setTimeout(r, 300));
    }
    if (seen?.status !== 200) {
      a.note = "has not connected yet: approve it with npx orchctl agents approve";
    } else if (seen.json.status === "pending") {
      const r = await api("POST", `/api/v1/agents/${a.nodeId}`, token, { status: "approved", name: a.name });
      if (r.status !== 200) a.note = `not approved (${r.json.code ?? r.status}): ${r.json.detail ?? ""}`;
    } else {
      a.name = seen.json.name ?? a.name;
      if (seen.json.status !== "approved") a.note = seen.json.status;
    }
  }
  await api("POST", "/api/v1/auth/logout", token).catch(() => undefined);
}

const localAgents = [];
const agentCount = Number(args.agents);
const agentMain = join(ROOT, "agent/dist/main.js");
if (agentCount > 0) {
  if (!existsSync(agentMain)) fail("agent/dist/main.js is missing (npm run build)");
  const link = process.env.ORCH_AGENTS_LINK_PORT ?? "7443";
  for (let i = 1; i <= agentCount; i++) {
    const dataDir = join(STATE, "agents", `agent-${i}`);
    const argv = [
      ...nodeFlagsFor("agent"),
      agentMain,
      "--server",
      `127.0.0.1:${link}`,
      "--data-dir",
      dataDir,
      ...agentTrust,
    ];
    localAgents.push({ name: `agent-${i}`, nodeId: await agentNodeId(dataDir) });
    supervise(`agent-${i}`, process.execPath, argv, {}, i + services.length + 2);
  }
  say(`started ${agentCount} local agent(s); approving them as agent-1…agent-${agentCount}`);
  await approveLocalAgents();
}

const rel = shownPath(keyPath);
const installLine = `curl -fsSL ${base}/install/agent.sh | sudo sh -s -- --token <npx orchctl join-tokens create --ttl 1h>`;
const agentLines = localAgents
  .map((a) => `\n              ${a.name}  node ${a.nodeId}${a.note ? `  (${a.note})` : ""}`)
  .join("");
process.stdout.write(`
\x1b[1mOrchestrator is up\x1b[0m
  API:        ${base}/api/v1   (OpenAPI: ${base}/api/v1/openapi.json)
  Agent link: ${linkSummary}
  Bus:        ${busSummary}
  Services:   ${Object.entries(status?.services ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(" ")}
  Log in:     npx orchctl login --server ${base} --key ${rel}
  Agents:     ${localAgents.length ? `${localAgents.length} local (same host, told apart by name):${agentLines}` : "none started here (npm run up -- --agents 2)"}
  Notifications: ${
    privateTargetsAllowed
      ? "private targets allowed (development: ORCH_NOTIFY_ALLOW_PRIVATE_TARGETS=true; channels may post to 127.0.0.1 and LAN addresses)"
      : "private targets refused (ORCH_NOTIFY_ALLOW_PRIVATE_TARGETS is off)"
  }
  Agent pkgs: ${
    agentPackage.build
      ? `orch-agent ${agentPackage.version} is being built in the background (a line says when it is published); then: ${installLine}`
      : haveReleases
        ? installLine
        : "none built yet: npm run build:agent-package (then the one-line install at /install/agent.sh works)"
  }
  Console:    ${publicUrl.replace(/\/+$/, "")}/
  Sign in:    npx orchctl console
  Then:       npx orchctl status · npx orchctl operators list · npx orchctl agents list
  Stop:       Ctrl-C
`);

// 6. The orch-agent package /install/agent.sh installs, when none was built from these inputs: after
// the banner, so logging in is not held up by it.
if (agentPackage.build) {
  const child = buildAgentPackageInBackground(agentPackage, {
    root: ROOT,
    releasesDir,
    signingKey: releaseSigningKey,
    say,
    stopping: () => stopping,
    installLine,
  });
  children.push({ name: "agent-package", child, restarts: 0 });
}
