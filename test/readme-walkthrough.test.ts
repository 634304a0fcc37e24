// The README's "First hour" walkthrough, run as written: every ```sh block after a
// <!-- walkthrough --> marker, in order, in one bash (later blocks use the variables earlier ones
// set), against `npm run up -- --agents 2` started here on private ports with its own NATS,
// database and state directory (and the environment the section asks up for), with `orchctl` on
// PATH. The section's default server URL becomes this stack's: the login line is up's own.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { createTestDatabase, eventually, freePort } from "@orch/kit/testing";

const ROOT = new URL("..", import.meta.url).pathname;
// Starting up, then the walkthrough, which waits for a scheduled drift check.
t.setTimeout(10 * 60_000);

/** The walkthrough's shell blocks: the ```sh fence right after each marker in "## First hour". */
function walkthroughBlocks(readme: string): string[] {
  const start = readme.indexOf("\n## First hour\n");
  if (start < 0) throw new Error('README.md has no "## First hour" section');
  const end = readme.indexOf("\n## ", start + 1);
  const section = readme.slice(start, end < 0 ? undefined : end);
  return [...section.matchAll(/<!-- walkthrough -->\n```sh\n([\s\S]*?)\n```\n/g)].map((m) => m[1]!);
}

const readme = readFileSync(join(ROOT, "README.md"), "utf8");
const section = readme.slice(readme.indexOf("\n## First hour\n"));
const DEFAULT_SERVER = "http://127.0.0.1:8080";
/** `VAR=value npm run up -- --agents 2`: what the walkthrough asks up to be started with. */
const upEnv = Object.fromEntries(
  [
    ...(/`((?:ORCH_[A-Z_]+=\S+ )*)npm run up -- --agents 2`/.exec(section)?.[1] ?? "").matchAll(
      /(ORCH_[A-Z_]+)=(\S+)/g,
    ),
  ].map((m) => [m[1]!, m[2]!]),
);
t.ok(
  upEnv.ORCH_STATE_DRIFT_INTERVAL_SECONDS,
  "the walkthrough starts up with short drift checks (to show enforcement)",
);
t.match(section, /shopt -s expand_aliases/, "it says a script needs expand_aliases for the alias");

const blocks = walkthroughBlocks(readme);
t.ok(blocks.length >= 8, `the walkthrough has its blocks (${blocks.length})`);
const loginLine = blocks
  .join("\n")
  .split("\n")
  .find((l) => /^orchctl login /.test(l));
t.ok(loginLine?.includes(`--server ${DEFAULT_SERVER}`), `the walkthrough logs in with up's line: ${loginLine}`);

const work = mkdtempSync(join(tmpdir(), "orch-walkthrough-"));
const bin = join(work, "bin");
mkdirSync(bin);
writeFileSync(join(bin, "orchctl"), `#!/bin/sh\nexec "${process.execPath}" "${ROOT}cli/dist/main.js" "$@"\n`);
chmodSync(join(bin, "orchctl"), 0o755);
const [httpPort, linkPort, natsPort] = [await freePort(), await freePort(), await freePort()];
const server = `http://127.0.0.1:${httpPort}`;
const db = await createTestDatabase();

// up keeps its state in ./.orch here, so the walkthrough's `.orch/admin.key` is this stack's key.
let upOutput = "";
const up: ChildProcess = spawn(
  process.execPath,
  [join(ROOT, "scripts/up.mjs"), "--no-build", "--no-install", "--agents", "2"],
  {
    cwd: work,
    env: {
      ...process.env,
      ORCH_UP_STATE_DIR: join(work, ".orch"),
      ORCH_HTTP_PORT: String(httpPort),
      ORCH_HTTP_PUBLIC_URL: "",
      ORCH_AGENTS_LINK_PORT: String(linkPort),
      NATS_URL: `nats://127.0.0.1:${natsPort}`,
      DATABASE_URL: db.url,
      ...upEnv,
    },
    stdio: ["ignore", "pipe", "pipe"],
  },
);
up.stdout!.on("data", (d: Buffer) => (upOutput += d.toString()));
up.stderr!.on("data", (d: Buffer) => (upOutput += d.toString()));
t.teardown(async () => {
  if (up.exitCode === null) {
    const exited = new Promise((r) => up.once("exit", r));
    up.kill("SIGTERM");
    await exited;
  }
  await db.drop();
  rmSync(work, { recursive: true, force: true });
});

await eventually(
  async () => {
    if (up.exitCode !== null) throw new Error(`up exited (${up.exitCode}):\n${upOutput}`);
    return upOutput.includes("Orchestrator is up");
  },
  120_000,
  200,
);

t.test("up's banner lists the named agents and the notification policy", async (t) => {
  t.match(upOutput, /agent-1 {2}node [0-9a-f]{32}\n/, "agent-1 with its node id");
  t.match(upOutput, /agent-2 {2}node [0-9a-f]{32}\n/, "agent-2 with its node id");
  t.match(upOutput, /Notifications: private targets allowed \(development/, "says private targets are allowed");
  const printed = /Log in: +(.*)\n/.exec(upOutput)?.[1];
  t.equal(
    printed,
    `npx ${loginLine!.replace(DEFAULT_SERVER, server)}`,
    "the README's login line is the one up prints (for this port)",
  );
});

t.test("every walkthrough block succeeds as written", async (t) => {
  const script = [
    "set -eo pipefail",
    ...blocks.flatMap((b, i) => [`echo "@@block ${i}"`, b.replaceAll(DEFAULT_SERVER, server)]),
  ].join("\n");
  writeFileSync(join(work, "walkthrough.sh"), `${script}\necho "@@end"\n`);
  const r = spawnSync("bash", [join(work, "walkthrough.sh")], {
    cwd: work,
    encoding: "utf8",
    timeout: 400_000,
    env: {
      ...process.env,
      PATH: `${bin}:${process.env.PATH}`,
      ORCHCTL_HOME: join(work, "orchctl"),
      DEMO: join(work, "demo"),
      NO_COLOR: "1",
    },
  });
  const out = `${r.stdout}${r.stderr}`;
  const reached = [...r.stdout.matchAll(/@@block (\d+)/g)].at(-1)?.[1];
  t.equal(r.status, 0, `the walkthrough exits 0 (last block started: ${reached})\n${out}`);
  t.match(r.stdout, /@@end/, "every block ran");
  const outputs = r.stdout.split(/@@block \d+\n/).slice(1);
  const find = (re: RegExp) => outputs.find((o) => re.test(o)) ?? "";

  t.match(find(/Logged in to/), /agent-1 is node [0-9a-f]{32}/, "login, then the agent's node id from --json");
  t.match(r.stdout, /Tags of agent-1: role=web/, "tagged");
  const first = find(/Uploaded module motd/);
  t.match(first, /plan \S+ on agent-1: succeeded — 1 changed/, "the plan shows the change");
  t.match(first, /apply \S+ on agent-1: succeeded — 1 changed/, "the assignment's apply makes it");
  t.match(first, /Welcome to web node \S+\n/, "the file has its rendered content");
  t.match(find(/drifted:/), /drifted: 1 resource[\s\S]*-edited by hand/, "drift finds the hand edit");
  const secret = find(/Created secret greeting/);
  t.match(secret, /apply \S+ on agent-1: succeeded — 2 changed/, "the second apply repairs and adds");
  t.match(secret, /hello from the vault\n/, "the secret reached the file");
  t.notMatch(secret.replace(/hello from the vault\n$/, ""), /hello from the vault/, "and no diff shows it");
  const enforced = find(/\(enforced\)/);
  t.match(enforced, /Updated assignment web: .*\(enforced\)/, "the assignment is enforced");
  t.match(enforced, /^Welcome to web node \S+\n/m, "enforcement put the file back without an apply by hand");
  t.notMatch(enforced, /edited by hand, again/, "the second hand edit is gone");
  t.match(enforced, /drift\.remediated/, "the audit log shows the remediation");
  t.match(find(/SESSION/), /agent-1\s+admin\s+closed/, "the terminal session is recorded and closed");
  const hook = find(/local-hook/);
  t.match(hook, /delivered:\s+yes/, "the channel test is delivered");
  t.match(hook, /"event_type":"channel\.tested"/, "the receiver got the payload");
  t.match(hook, /Removed channel local-hook/, "the demo channel is removed at the end");
});
