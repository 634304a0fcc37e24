// What the orch-agent package is built from, and one hash of it: `npm run up` builds the package
// again only when this hash changes (the agent's sources and the workspace packages it bundles, the
// package build itself, the lockfile, which pins node-pty and esbuild, and the pinned Node).
import { createHash } from "node:crypto";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";

/** Never inputs: build output, installed modules, tests. */
const SKIP = new Set(["node_modules", "dist", "test", ".turbo"]);
const FIXED = ["package-lock.json", ".node-version", "scripts/agent-package", "scripts/lib/pinned-node.mjs"];

/** Files under `rel` (a file or a directory) in `root`, relative and sorted. */
function filesUnder(root, rel) {
  const abs = join(root, rel);
  if (!existsSync(abs)) return [];
  if (!statSync(abs).isDirectory()) return [rel];
  return readdirSync(abs, { withFileTypes: true })
    .filter((e) => !SKIP.has(e.name))
    .flatMap((e) => (e.isDirectory() ? filesUnder(root, join(rel, e.name)) : e.isFile() ? [join(rel, e.name)] : []));
}

/** The workspace dirs the agent bundles: agent/ and, transitively, each @orch/* package it depends on. */
export function agentWorkspaces(root) {
  const byName = new Map(
    readdirSync(join(root, "packages"))
      .filter((d) => existsSync(join(root, "packages", d, "package.json")))
      .map((d) => [JSON.parse(readFileSync(join(root, "packages", d, "package.json"), "utf8")).name, `packages/${d}`]),
  );
  const seen = new Set();
  const visit = (dir) => {
    if (seen.has(dir)) return;
    seen.add(dir);
    const { dependencies = {} } = JSON.parse(readFileSync(join(root, dir, "package.json"), "utf8"));
    for (const name of Object.keys(dependencies)) if (byName.has(name)) visit(byName.get(name));
  };
  visit("agent");
  return [...seen].sort();
}

/** Every input file of the package, relative to `root`, sorted. */
export const agentPackageInputs = (root) =>
  [...new Set([...agentWorkspaces(root), ...FIXED].flatMap((rel) => filesUnder(root, rel)))].sort();

/**
 * sha256 (hex) over each file's path and bytes, in order, then `extra` (settings that change the
 * result without being files: where it is published, the key it is signed with).
 */
export function hashInputs(files, read, extra = {}) {
  const h = createHash("sha256");
  for (const f of files) {
    const bytes = read(f);
    h.update(`${f}\0${bytes.length}\0`);
    h.update(bytes);
  }
  h.update(JSON.stringify(Object.entries(extra).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))));
  return h.digest("hex");
}

/** The hash of the package's inputs in `root`, with `extra` as in hashInputs. */
export const agentPackageHash = (root, extra = {}) =>
  hashInputs(agentPackageInputs(root), (f) => readFileSync(join(root, f)), extra);
