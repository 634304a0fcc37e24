#!/usr/bin/env node
// `node scripts/preflight.mjs test|up`: checks the system tools (and, for the tests, the Postgres
// server) that `npm test` or `npm run up` need, before a long build hides the cause behind an
// `execvp(3) failed` twenty minutes later. Prints what is missing, why, and the apt-get line that
// installs it; exits 1 when anything is missing. Plain Node only: it runs before `npm ci`.
// Commands are looked up on PATH the way the tests spawn them (by name), so PATH decides.
import { accessSync, constants, existsSync, readdirSync } from "node:fs";
import { portOpen } from "./lib/port-open.mjs";
import { delimiter, join } from "node:path";

const mode = process.argv[2];
if (mode !== "test" && mode !== "up") {
  process.stderr.write("usage: node scripts/preflight.mjs test|up\n");
  process.exit(2);
}

/** The path of an executable `name` on PATH, or undefined. */
function onPath(name, path = process.env.PATH ?? "") {
  for (const dir of path.split(delimiter).filter(Boolean)) {
    const file = join(dir, name);
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {}
  }
  return undefined;
}

const hostPort = (url, defaultPort) => {
  const u = new URL(url.split(",")[0].replace(/^nats:/, "http:"));
  return { host: u.hostname, port: Number(u.port || defaultPort) };
};

const postgresInstalled = () =>
  Boolean(onPath("postgres")) ||
  (existsSync("/usr/lib/postgresql") &&
    readdirSync("/usr/lib/postgresql").some((v) => existsSync(`/usr/lib/postgresql/${v}/bin/postgres`)));

const cmd = (name) => () => Boolean(onPath(name));

/**
 * One requirement: `ok` says whether it is met, `packages` the Debian packages that meet it,
 * `why` what fails without it, `hint` any step apt-get does not do.
 */
const TEST = [
  {
    what: "asciinema",
    ok: cmd("asciinema"),
    packages: ["asciinema"],
    why: "terminal tests play recorded transcripts with `asciinema cat` (else: execvp(3) failed)",
  },
  {
    what: "chromium (/usr/bin/chromium) and the DejaVu fonts",
    ok: () => existsSync("/usr/bin/chromium") && existsSync("/usr/share/fonts/truetype/dejavu"),
    packages: ["chromium", "fonts-dejavu-core"],
    why: "the web console's browser tests drive the system Chromium",
  },
  {
    what: "debootstrap",
    ok: cmd("debootstrap"),
    packages: ["debootstrap"],
    why: "the agent install tests build a Debian root to install the agent package into",
  },
  {
    what: "shellcheck",
    ok: cmd("shellcheck"),
    packages: ["shellcheck"],
    why: "the install script and the agent package's scripts are checked with ShellCheck",
  },
  {
    what: "promtool",
    ok: cmd("promtool"),
    packages: ["prometheus"],
    why: "the monitoring test validates the PrometheusRule with promtool (its daemon is not needed)",
    hint: "apt may start the prometheus daemon: systemctl stop prometheus",
  },
  {
    what: "nats-server",
    ok: () => Boolean(process.env.NATS_SERVER_BIN ? existsSync(process.env.NATS_SERVER_BIN) : onPath("nats-server")),
    packages: ["nats-server"],
    why: "integration tests start a private nats-server per test file (or set NATS_SERVER_BIN)",
  },
  {
    what: "ansible-playbook and puppet",
    ok: () => onPath("ansible-playbook") && onPath("puppet"),
    packages: ["ansible", "puppet"],
    why: "the peer benchmark (npm run bench -- peers, run once at a tiny size by the tests) compares this project with Ansible and Puppet",
  },
  { what: "git", ok: cmd("git"), packages: ["git"], why: "the git sources tests make repositories" },
  {
    what: "jq",
    ok: cmd("jq"),
    packages: ["jq"],
    why: "the README's First hour walkthrough (run by test/readme-walkthrough.test.ts) reads JSON with jq",
  },
  {
    what: "a Postgres server",
    ok: () => {
      const { host, port } = hostPort(
        process.env.TEST_DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/postgres",
        5432,
      );
      return portOpen(host, port);
    },
    packages: ["postgresql"],
    why: "integration tests create a database per test file on TEST_DATABASE_URL (default 127.0.0.1:5432, user postgres, trust)",
    hint: 'start it: pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start',
  },
];

// up starts NATS and Postgres itself when none answers, so it needs their binaries only then.
const UP = [
  {
    what: "NATS (answering at NATS_URL, or nats-server to start one)",
    ok: async () => {
      // Without NATS_URL up starts its own server with the bus users, whatever answers on 4222.
      const given = process.env.NATS_URL || process.argv.includes("--insecure-bus");
      const { host, port } = hostPort(process.env.NATS_URL || "nats://127.0.0.1:4222", 4222);
      return (
        (given && (await portOpen(host, port))) || Boolean(onPath("nats-server")) || existsSync("/usr/sbin/nats-server")
      );
    },
    packages: ["nats-server"],
    why: "every service talks over NATS with JetStream",
  },
  {
    what: "Postgres (answering at DATABASE_URL, or the postgresql binaries to start one)",
    ok: async () => {
      const { host, port } = hostPort(process.env.DATABASE_URL ?? "postgres://postgres@127.0.0.1:5432/orch", 5432);
      return (await portOpen(host, port)) || postgresInstalled();
    },
    packages: ["postgresql"],
    why: "every service keeps its state in Postgres",
  },
];

const missing = [];
for (const r of mode === "test" ? TEST : UP) if (!(await r.ok())) missing.push(r);

if (!missing.length) {
  if (mode === "test") process.stdout.write("[preflight] every tool the tests need is installed\n");
  process.exit(0);
}
const packages = [...new Set(missing.flatMap((r) => r.packages))];
const lines = [
  `[preflight] ${mode === "test" ? "npm test" : "npm run up"} needs what this machine lacks:`,
  ...missing.map((r) => `  - ${r.what}: ${r.why}`),
  "Install it (Debian/Ubuntu, as root):",
  `  apt-get update && apt-get install -y ${packages.join(" ")}`,
  ...missing.filter((r) => r.hint).map((r) => `  then ${r.hint}`),
];
process.stderr.write(`${lines.join("\n")}\n`);
process.exit(1);
