/**
 * The agent as one ES module: esbuild bundles agent/src/main.ts and everything it imports from
 * source (workspace packages through their "orch-source" export condition), except node-pty, whose
 * native binding must sit on disk next to its loader (copied as lib/node_modules/node-pty).
 */
import { cpSync, mkdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { build, type Metafile } from "esbuild";

/** Bundled with the package as files, not into the bundle. */
export const EXTERNAL_MODULES = ["node-pty"];

export interface BundleResult {
  file: string;
  bytes: number;
  /** Input bytes per top-level package (node_modules/<name> or the workspace dir), largest first. */
  inputs: [string, number][];
}

export async function bundleAgent(repo: string, outFile: string): Promise<BundleResult> {
  mkdirSync(dirname(outFile), { recursive: true });
  const result = await build({
    entryPoints: [join(repo, "agent/src/main.ts")],
    outfile: outFile,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node24",
    conditions: ["orch-source"],
    external: EXTERNAL_MODULES,
    // CommonJS dependencies (@grpc/grpc-js, ...) call require() for Node built-ins; an ES module
    // has no require, so give the bundle one.
    banner: {
      js: 'import { createRequire as __orchCreateRequire } from "node:module";\nconst require = __orchCreateRequire(import.meta.url);',
    },
    legalComments: "eof",
    metafile: true,
    logLevel: "warning",
    absWorkingDir: repo,
  });
  const bytes = result.metafile.outputs[Object.keys(result.metafile.outputs)[0]!]!.bytes;
  return { file: outFile, bytes, inputs: inputsByPackage(result.metafile) };
}

function inputsByPackage(meta: Metafile): [string, number][] {
  const sizes = new Map<string, number>();
  for (const [path, input] of Object.entries(meta.inputs)) {
    const m = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(path);
    const key = m ? m[1]! : path.split("/").slice(0, 2).join("/");
    sizes.set(key, (sizes.get(key) ?? 0) + input.bytes);
  }
  return [...sizes].sort((a, b) => b[1] - a[1]);
}

/** node-pty as the bundle's import resolves it: lib/node_modules/node-pty/{package.json,LICENSE,lib,build/Release/pty.node}. */
export function copyNodePty(repo: string, libDir: string): void {
  const src = join(repo, "node_modules/node-pty");
  const dst = join(libDir, "node_modules/node-pty");
  mkdirSync(join(dst, "build/Release"), { recursive: true });
  cpSync(join(src, "package.json"), join(dst, "package.json"));
  cpSync(join(src, "LICENSE"), join(dst, "LICENSE"));
  // Only what runs on Linux: no tests, source maps or Windows agents.
  cpSync(join(src, "lib"), join(dst, "lib"), {
    recursive: true,
    filter: (p) => !/\.(test\.js|map)$/.test(p) && !/windows|conpty/i.test(p.slice(p.lastIndexOf("/"))),
  });
  cpSync(join(src, "build/Release/pty.node"), join(dst, "build/Release/pty.node"));
}
