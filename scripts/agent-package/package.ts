/**
 * buildAgentPackage: the .deb, the tarball, manifest.json and its signature manifest.json.sig of
 * one orch-agent version in `<outDir>/<version>/` (the layout releases.dir and the gateway's
 * /install routes serve).
 */
import { execFileSync } from "node:child_process";
import { createHash, type KeyObject } from "node:crypto";
import { mkdtempSync, readFileSync, renameSync, rmSync, statSync, writeFileSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import {
  checkAgentVersion,
  debFileName,
  formatReleaseManifest,
  tarFileName,
  type ReleaseManifest,
  type ReleasePackage,
} from "@orch/contracts";
import { signReleaseDir } from "@orch/kit/releases";
import { defaultRuntimeCache, fetchNodeRuntime, NODE_RUNTIME_VERSION } from "./runtime.js";
import { layTree, tarMembers } from "./tree.js";

export const REPO = fileURLToPath(new URL("../../", import.meta.url));
export const DEFAULT_OUT_DIR = join(REPO, "dist/agent-releases");
/** Only amd64 for now: node-pty's native binding is built on this amd64 host (see runtime.ts). */
export const ARCH = "amd64";

export interface BuildOptions {
  /** Default: agent/package.json's version. */
  version?: string;
  outDir: string;
  /** Where the Node runtime is downloaded once (ORCH_AGENT_PACKAGE_CACHE, default the pinned Node's cache, ORCH_NODE_CACHE). */
  cacheDir?: string;
  /** Progress lines (sizes, timings); default silent. */
  log?: (line: string) => void;
  /**
   * The release signing key (Ed25519): the manifest is signed here, once, and the signature stored
   * beside it. The gateway only serves it (and checks it with the public key).
   */
  signingKey: KeyObject;
}

export interface BuildResult {
  dir: string;
  manifest: ReleaseManifest;
}

export const agentPackageVersion = (): string =>
  (JSON.parse(readFileSync(join(REPO, "agent/package.json"), "utf8")) as { version: string }).version;

export async function buildAgentPackage(o: BuildOptions): Promise<BuildResult> {
  const log = o.log ?? (() => {});
  const version = o.version ?? agentPackageVersion();
  const bad = checkAgentVersion(version);
  if (bad) throw new Error(`--version ${JSON.stringify(version)}: ${bad.message}`);
  const outDir = resolve(o.outDir);
  const cacheDir = resolve(o.cacheDir ?? defaultRuntimeCache());
  const step = timer(log);

  const runtime = fetchNodeRuntime(cacheDir, NODE_RUNTIME_VERSION);
  step(`node runtime v${runtime.version} (${mb(statSync(runtime.node).size)})`);

  const root = mkdtempSync(join(tmpdir(), "orch-agent-package-"));
  // Written next to the final dir and renamed in: a reader of outDir never sees half a release
  // (a dot-dir is not a version, so release catalogs skip it).
  mkdirSync(outDir, { recursive: true });
  const partial = mkdtempSync(join(outDir, `.${version}.partial-`));
  try {
    const tree = await layTree({ repo: REPO, root, version, runtime });
    step(
      `bundle lib/orch-agent.mjs ${mb(tree.bundle.bytes)}; largest inputs: ${tree.bundle.inputs
        .slice(0, 5)
        .map(([n, b]) => `${n} ${mb(b)}`)
        .join(", ")}`,
    );
    checkRelease(tree.release, version, runtime.version);
    step("bundled agent runs on the bundled node (--version, node-pty loads)");

    const deb = join(partial, debFileName(version, ARCH));
    // xz -2: a third of the time of the default -6 for ~15% more bytes (the node binary dominates both).
    execFileSync("dpkg-deb", ["--build", "--root-owner-group", "-Zxz", "-z2", root, deb], {
      stdio: ["ignore", "ignore", "inherit"],
    });
    step(`${debFileName(version, ARCH)} ${mb(statSync(deb).size)}`);

    const tar = join(partial, tarFileName(version, ARCH));
    const list = join(root, "..", `${root.split("/").pop()}.members`);
    writeFileSync(list, `${tarMembers(root).join("\n")}\n`);
    try {
      execFileSync("tar", [
        "-czf",
        tar,
        "--owner=0",
        "--group=0",
        "--numeric-owner",
        "--no-recursion",
        "-C",
        root,
        "-T",
        list,
      ]);
    } finally {
      rmSync(list, { force: true });
    }
    step(`${tarFileName(version, ARCH)} ${mb(statSync(tar).size)}`);

    const manifest: ReleaseManifest = {
      schema: 1,
      name: "orch-agent",
      version,
      node_version: `v${runtime.version}`,
      created_at: new Date().toISOString(),
      packages: [entry(deb, "deb"), entry(tar, "tar")],
    };
    writeFileSync(join(partial, "manifest.json"), formatReleaseManifest(manifest));
    // In the partial dir too: the release appears signed, or not at all.
    await signReleaseDir(partial, o.signingKey);
    const dir = join(outDir, version);
    rmSync(dir, { recursive: true, force: true });
    renameSync(partial, dir);
    step(`manifest.json and manifest.json.sig → ${dir}`);
    return { dir, manifest };
  } finally {
    rmSync(root, { recursive: true, force: true });
    rmSync(partial, { recursive: true, force: true });
  }
}

/** The release must run: its launcher prints the version on the bundled node, and pty.node loads there. */
function checkRelease(release: string, version: string, nodeVersion: string): void {
  const out = execFileSync(join(release, "bin/orch-agent"), ["--version"], { encoding: "utf8" }).trim();
  if (out !== `orch-agent ${version} (node v${nodeVersion})`)
    throw new Error(`--version printed ${JSON.stringify(out)}`);
  execFileSync(
    join(release, "node/bin/node"),
    [
      "--input-type=module",
      "-e",
      `import { createRequire } from "node:module"; createRequire(${JSON.stringify(join(release, "lib/x.mjs"))})("node-pty");`,
    ],
    { stdio: ["ignore", "ignore", "inherit"] },
  );
}

function entry(file: string, kind: ReleasePackage["kind"]): ReleasePackage {
  const bytes = readFileSync(file);
  return {
    file: file.split("/").pop()!,
    kind,
    arch: ARCH,
    sha256: createHash("sha256").update(bytes).digest("hex"),
    size: bytes.length,
  };
}

const mb = (n: number) => `${(n / 1024 / 1024).toFixed(1)} MB`;

function timer(log: (l: string) => void) {
  const t0 = performance.now();
  let last = t0;
  return (what: string) => {
    const now = performance.now();
    log(`${what} (${((now - last) / 1000).toFixed(1)} s, total ${((now - t0) / 1000).toFixed(1)} s)`);
    last = now;
  };
}
