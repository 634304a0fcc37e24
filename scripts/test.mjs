#!/usr/bin/env node
// `npm test [-- <tap args>]`: checks the system tools (scripts/preflight.mjs), builds, and runs tap,
// all on the pinned Node: on an older system Node (Debian's 20) the whole chain re-runs under the
// pinned runtime (scripts/lib/pinned-node.mjs). Plain Node: it runs before anything is installed.
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { onPinnedNode } from "./lib/pinned-node.mjs";

await onPinnedNode();
const ROOT = new URL("..", import.meta.url).pathname;

/** Runs one step in the clone, stopping the chain with its status when it fails. */
function step(cmd, args) {
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: "inherit" });
  if (r.error) {
    process.stderr.write(`[test] ${cmd}: ${r.error.message}\n`);
    process.exit(1);
  }
  if (r.status !== 0) process.exit(r.status ?? 1);
}

step(process.execPath, [join(ROOT, "scripts/preflight.mjs"), "test"]);
// Which Node the build and the tests run on, in the log (CI runs this from the system Node's PATH).
process.stdout.write(`[test] node ${process.version} (${process.execPath})\n`);
step("npm", ["run", "build"]);
step(join(ROOT, "node_modules/.bin/tap"), process.argv.slice(2));
