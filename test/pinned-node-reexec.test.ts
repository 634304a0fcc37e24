// The entry scripts on the system Node (PATH=/usr/bin:/bin: Debian's 20 here), as a fresh clone's
// user runs them: `npm run agent` re-runs itself under the pinned Node (already in the cache, so no
// download), saying so in one line, and passes the exit status back. On a system Node that is not
// older it runs as it is, without that line. Also: `npm run agent` trusts the development CA of
// ORCH_UP_STATE_DIR.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import t from "tap";
import { nodeCache, olderThanPinned, PINNED_NODE_VERSION, pinnedNodeDir } from "../scripts/lib/pinned-node.mjs";

const ROOT = new URL("..", import.meta.url).pathname;
const SYSTEM_PATH = "/usr/bin:/bin";
const systemNode = spawnSync("node", ["-p", "process.versions.node"], {
  encoding: "utf8",
  env: { PATH: SYSTEM_PATH },
}).stdout.trim();
t.match(systemNode, /^\d+\.\d+\.\d+$/, `a system node on ${SYSTEM_PATH}`);
const reruns = olderThanPinned(systemNode);
const agentVersion = spawnSync(process.execPath, [join(ROOT, "scripts/agent.mjs"), "--version"], {
  encoding: "utf8",
}).stdout.trim();

/** The environment of a shell with only the system PATH: nothing from this (maybe re-run) test run. */
function systemEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: SYSTEM_PATH, HOME: process.env.HOME, ...extra };
  if (process.env.ORCH_NODE_CACHE) env.ORCH_NODE_CACHE = process.env.ORCH_NODE_CACHE;
  return env;
}

const nodeLines = (stderr: string) => stderr.split("\n").filter((l) => l.startsWith("[node]"));

t.test("npm run agent -- --version on the system Node", async (t) => {
  const r = spawnSync("npm", ["run", "--silent", "agent", "--", "--version"], {
    cwd: ROOT,
    encoding: "utf8",
    env: systemEnv(),
  });
  t.equal(r.status, 0, r.stderr);
  t.equal(r.stdout.trim(), agentVersion, "the agent answers, on the pinned Node");
  t.match(agentVersion, `(node v${PINNED_NODE_VERSION})`);
  if (reruns) {
    const node = join(pinnedNodeDir(nodeCache(process.env)), "bin/node");
    t.same(
      nodeLines(r.stderr),
      [`[node] system Node v${systemNode} is older than ${PINNED_NODE_VERSION}: re-running under ${node}`],
      "exactly one line says so",
    );
  } else {
    t.same(nodeLines(r.stderr), [], `Node ${systemNode} is new enough: nothing is re-run`);
  }
});

t.test("the re-run's exit status is the command's", async (t) => {
  const direct = spawnSync(process.execPath, [join(ROOT, "scripts/agent.mjs"), "--no-such-flag"], {
    encoding: "utf8",
  });
  t.not(direct.status, 0, "the agent refuses an unknown flag");
  const r = spawnSync("node", [join(ROOT, "scripts/agent.mjs"), "--no-such-flag"], {
    encoding: "utf8",
    env: systemEnv(),
  });
  t.equal(r.status, direct.status);
});

t.test("a re-run never re-runs again", async (t) => {
  const r = spawnSync("node", [join(ROOT, "scripts/agent.mjs"), "--version"], {
    encoding: "utf8",
    env: systemEnv({ ORCH_PINNED_NODE: "/nowhere" }),
  });
  t.equal(r.status, 0, r.stderr);
  t.equal(r.stdout.trim(), `${agentVersion.split(" (")[0]} (node v${systemNode})`, "it runs on the system Node");
  t.same(
    nodeLines(r.stderr),
    reruns ? [`[node] warning: still on Node v${systemNode} under /nowhere; going on with it`] : [],
    "and says so when that Node is too old",
  );
});

t.test("npm run agent trusts the development CA in ORCH_UP_STATE_DIR", async (t) => {
  const state = mkdtempSync(join(tmpdir(), "orch-agent-state-"));
  t.teardown(() => rmSync(state, { recursive: true, force: true }));
  mkdirSync(join(state, "tls"));
  writeFileSync(join(state, "tls/ca.crt"), "not read before the line below\n");
  const child: ChildProcess = spawn(
    process.execPath,
    [join(ROOT, "scripts/agent.mjs"), "--server", "127.0.0.1:1", "--data-dir", join(state, "agent")],
    { env: { ...process.env, ORCH_UP_STATE_DIR: state }, stdio: ["ignore", "ignore", "pipe"] },
  );
  const exited = new Promise((r) => child.once("exit", r));
  t.teardown(async () => {
    // agent.mjs passes SIGTERM on to the agent it started.
    child.kill("SIGTERM");
    await exited;
  });
  const line = await new Promise<string>((resolve, reject) => {
    let err = "";
    child.stderr!.on("data", (d: Buffer) => {
      err += d.toString();
      const m = /^\[agent\] trusting the development CA .*$/m.exec(err);
      if (m) resolve(m[0]);
    });
    child.once("exit", () => reject(new Error(`agent.mjs exited without the line:\n${err}`)));
  });
  t.match(line, `trusting the development CA ${join(state, "tls/ca.crt")}`);
});
