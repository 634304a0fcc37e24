// scripts/lib/agent-package-inputs.mjs: `npm run up` rebuilds the agent package only when this
// hash changes; it must change with what goes into the package and with nothing else.
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import t from "tap";
import {
  agentPackageHash,
  agentPackageInputs,
  agentWorkspaces,
  hashInputs,
} from "../scripts/lib/agent-package-inputs.mjs";

/** A small clone: the agent depends on @orch/kit, which depends on @orch/contracts; @orch/client is not bundled. */
function clone(): string {
  const root = mkdtempSync(join(tmpdir(), "orch-agent-inputs-"));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const files: Record<string, string> = {
    "agent/package.json": JSON.stringify({ name: "@orch/agent", dependencies: { "@orch/kit": "0.1.0", yaml: "2" } }),
    "agent/src/main.ts": "main",
    "agent/test/main.test.ts": "a test",
    "agent/dist/main.js": "built",
    "packages/kit/package.json": JSON.stringify({ name: "@orch/kit", dependencies: { "@orch/contracts": "0.1.0" } }),
    "packages/kit/src/index.ts": "kit",
    "packages/contracts/package.json": JSON.stringify({ name: "@orch/contracts" }),
    "packages/contracts/src/index.ts": "contracts",
    "packages/client/package.json": JSON.stringify({ name: "@orch/client" }),
    "packages/client/src/index.ts": "client",
    "package-lock.json": "{}",
    ".node-version": "24.21.0\n",
    "scripts/agent-package/build.ts": "build",
    "scripts/lib/pinned-node.mjs": "fetch",
    "scripts/up.mjs": "up",
  };
  for (const [f, text] of Object.entries(files)) {
    mkdirSync(dirname(join(root, f)), { recursive: true });
    writeFileSync(join(root, f), text);
  }
  return root;
}

t.test("the agent's workspaces are followed through their dependencies", async (t) => {
  t.same(agentWorkspaces(clone()), ["agent", "packages/contracts", "packages/kit"]);
});

t.test("the inputs: sources, the package build, the lockfile and the pin; no tests or build output", async (t) => {
  t.same(agentPackageInputs(clone()), [
    ".node-version",
    "agent/package.json",
    "agent/src/main.ts",
    "package-lock.json",
    "packages/contracts/package.json",
    "packages/contracts/src/index.ts",
    "packages/kit/package.json",
    "packages/kit/src/index.ts",
    "scripts/agent-package/build.ts",
    "scripts/lib/pinned-node.mjs",
  ]);
});

t.test("the hash changes with an input and with the settings, not with anything else", async (t) => {
  const root = clone();
  const base = agentPackageHash(root, { releasesDir: "/r" });
  t.match(base, /^[0-9a-f]{64}$/);
  t.equal(agentPackageHash(root, { releasesDir: "/r" }), base, "the same inputs, the same hash");
  for (const f of ["agent/test/main.test.ts", "agent/dist/main.js", "packages/client/src/index.ts", "scripts/up.mjs"]) {
    writeFileSync(join(root, f), "changed");
    t.equal(agentPackageHash(root, { releasesDir: "/r" }), base, `${f} is not an input`);
  }
  t.not(agentPackageHash(root, { releasesDir: "/other" }), base, "another releases dir");
  t.not(agentPackageHash(root, { releasesDir: "/r", signedBy: "k" }), base, "another signing key");
  for (const f of ["packages/contracts/src/index.ts", "package-lock.json", ".node-version"]) {
    const r = clone();
    writeFileSync(join(r, f), "changed");
    t.not(agentPackageHash(r, { releasesDir: "/r" }), base, `${f} is an input`);
  }
});

t.test("a file's name counts, and content cannot slide across file boundaries", async (t) => {
  const read = (m: Record<string, string>) => (f: string) => Buffer.from(m[f]!);
  const a = hashInputs(["x", "y"], read({ x: "ab", y: "c" }));
  t.not(hashInputs(["x", "y"], read({ x: "a", y: "bc" })), a);
  t.not(hashInputs(["x", "z"], read({ x: "ab", z: "c" })), a);
  t.equal(
    hashInputs(["x", "y"], read({ x: "ab", y: "c" }), { b: 1, a: 2 }),
    hashInputs(["x", "y"], read({ x: "ab", y: "c" }), { a: 2, b: 1 }),
    "settings in any order",
  );
});
