#!/usr/bin/env node
// Assembles the runtime tree of the image from a built, pruned repository (run in the Dockerfile's
// build stage after `npm run build` and `npm prune --omit=dev`):
//
//   node deploy/docker/assemble.mjs /out [repo-root]
//
// Copies the root package.json, package-lock.json and node_modules (the workspace links in it
// stay relative links), and for each workspace of the root package.json its package.json, dist/
// (without declaration files), migrations/ and any other runtime files; sources, tests, build
// configuration and caches stay behind. Creates /out/bin for the `orch` entrypoint.
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { basename, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Names left out of every workspace: sources, tests, build configuration, caches. */
export const EXCLUDED_NAMES = new Set(["src", "test", "tests", "coverage", ".turbo", ".tap", "node_modules/.cache"]);
const EXCLUDED_PATTERNS = [
  /^tsconfig(\..+)?\.json$/,
  /\.tsbuildinfo$/,
  /\.d\.ts$/,
  /\.d\.ts\.map$/,
  /\.test\.[cm]?js(\.map)?$/,
];

/** Expands the root package.json `workspaces` (plain paths and `dir/*`) to workspace folders. */
export function workspaceDirs(root) {
  const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8"));
  const patterns = Array.isArray(pkg.workspaces) ? pkg.workspaces : (pkg.workspaces?.packages ?? []);
  const dirs = [];
  for (const p of patterns) {
    if (p.endsWith("/*") && !p.slice(0, -2).includes("*")) {
      const parent = join(root, p.slice(0, -2));
      if (!existsSync(parent)) continue;
      for (const name of readdirSync(parent).sort()) {
        const dir = join(p.slice(0, -2), name);
        if (existsSync(join(root, dir, "package.json"))) dirs.push(dir);
      }
    } else if (!p.includes("*")) {
      if (existsSync(join(root, p, "package.json"))) dirs.push(p);
    } else {
      throw new Error(`assemble: unsupported workspace pattern ${JSON.stringify(p)}`);
    }
  }
  return dirs;
}

function keep(src, wsRoot) {
  const rel = relative(wsRoot, src);
  if (rel === "") return true;
  const top = rel.split("/")[0];
  if (EXCLUDED_NAMES.has(top) || EXCLUDED_NAMES.has(rel)) return false;
  return !EXCLUDED_PATTERNS.some((re) => re.test(basename(src)));
}

export function assemble(out, root) {
  mkdirSync(join(out, "bin"), { recursive: true });
  for (const f of ["package.json", "package-lock.json"]) {
    if (existsSync(join(root, f))) cpSync(join(root, f), join(out, f));
  }
  if (existsSync(join(root, "node_modules"))) {
    cpSync(join(root, "node_modules"), join(out, "node_modules"), { recursive: true, verbatimSymlinks: true });
  }
  const workspaces = workspaceDirs(root);
  for (const ws of workspaces) {
    const from = join(root, ws);
    cpSync(from, join(out, ws), {
      recursive: true,
      verbatimSymlinks: true,
      filter: (src) => keep(src, from),
    });
  }
  return workspaces;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === resolve(process.argv[1])) {
  const [out, root = process.cwd()] = process.argv.slice(2);
  if (!out) {
    process.stderr.write("usage: node deploy/docker/assemble.mjs <out-dir> [repo-root]\n");
    process.exit(64);
  }
  const ws = assemble(resolve(out), resolve(root));
  process.stdout.write(`assembled ${ws.length} workspaces into ${out}: ${ws.join(", ")}\n`);
}
