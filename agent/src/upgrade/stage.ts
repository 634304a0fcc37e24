import { execFile } from "node:child_process";
import { createHash } from "node:crypto";
import { mkdir, readFile, rename, rm, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { checkAgentVersion, parseReleaseManifest, tarFileName, type ReleaseArch } from "@orch/contracts";
import { verifyManifest } from "@orch/kit/releases";
import type { AgentLogger } from "../runtime.js";
import { DownloadError, download } from "./download.js";
import { switchCurrent, type InstallLayout } from "./layout.js";
import { writeMarker, type UpgradeMarker } from "./marker.js";
import { UpgradeRefused, type UpgradeState } from "./states.js";

const run = promisify(execFile);

export interface StageDeps {
  layout: InstallLayout | undefined;
  packagesUrl: string | undefined;
  releaseKeyFile: string | undefined;
  currentVersion: string;
  dataDir: string;
  arch: ReleaseArch | undefined;
  now(): number;
  log: AgentLogger;
  onState?(s: UpgradeState): void;
  /** Tests shorten these. */
  timeouts?: { manifestMs?: number; packageMs?: number; smokeMs?: number };
}

export interface StageRequest {
  id: string;
  version: string;
  deadlineSeconds: number;
  /** Unix ms: the caller stops waiting then, so the switch must not happen after it. */
  notAfter?: number;
}

const MAX_MANIFEST_BYTES = 1_048_576;

/** The package this machine installs: the tarball (same tree as the .deb) for its architecture. */
export const releaseArch = (arch: string = process.arch): ReleaseArch | undefined =>
  arch === "x64" ? "amd64" : arch === "arm64" ? "arm64" : undefined;

/**
 * Downloads, verifies, unpacks and smoke-tests `req.version` beside the running release, then
 * writes the marker and switches `current` to it. Throws UpgradeRefused (nothing changed) at any
 * step before the switch. The caller replies and restarts.
 */
export async function stageUpgrade(deps: StageDeps, req: StageRequest): Promise<UpgradeMarker> {
  const { layout, log } = deps;
  const state = (s: UpgradeState) => {
    deps.onState?.(s);
    log.info({ upgrade_id: req.id, version: req.version, state: s }, "agent upgrade");
  };
  if (!layout)
    throw new UpgradeRefused(
      "upgrade_unsupported",
      "this agent does not run from an installed package (/opt/orch-agent)",
    );
  if (!deps.packagesUrl || !deps.releaseKeyFile)
    throw new UpgradeRefused(
      "upgrade_unsupported",
      "no --packages-url or --release-key: reinstall with the install script",
    );
  if (!deps.arch)
    throw new UpgradeRefused("upgrade_unsupported", `no packages for this architecture (${process.arch})`);
  if (checkAgentVersion(req.version)) throw new UpgradeRefused("package_invalid", `'${req.version}' is not a version`);
  if (req.version === deps.currentVersion)
    throw new UpgradeRefused("already_current", `orch-agent ${req.version} is already running`);

  state("downloading");
  const base = `${deps.packagesUrl.replace(/\/+$/, "")}/releases/${req.version}`;
  const t = deps.timeouts ?? {};
  const fetchOr = async (url: string, timeoutMs: number, maxBytes: number) => {
    try {
      return await download(url, { timeoutMs, maxBytes });
    } catch (err) {
      if (err instanceof DownloadError && err.tooLarge) throw new UpgradeRefused("checksum_mismatch", err.message);
      throw new UpgradeRefused("download_failed", (err as Error).message);
    }
  };
  const manifestBytes = await fetchOr(`${base}/manifest.json`, t.manifestMs ?? 30_000, MAX_MANIFEST_BYTES);
  const sig = (await fetchOr(`${base}/manifest.json.sig`, t.manifestMs ?? 30_000, 4096)).toString("utf8");

  state("verifying");
  let keyPem: string;
  try {
    keyPem = await readFile(deps.releaseKeyFile, "utf8");
  } catch (err) {
    throw new UpgradeRefused("upgrade_unsupported", `release key ${deps.releaseKeyFile}: ${(err as Error).message}`);
  }
  if (!verifyManifest(manifestBytes, sig, keyPem))
    throw new UpgradeRefused(
      "signature_invalid",
      "the manifest's signature does not verify with this agent's release key",
    );
  const manifest = parseReleaseManifest(manifestBytes.toString("utf8"));
  if (!manifest || manifest.version !== req.version)
    throw new UpgradeRefused("package_invalid", `the signed manifest is not orch-agent ${req.version}'s`);
  const pkg = manifest.packages.find(
    (p) => p.kind === "tar" && p.arch === deps.arch && p.file === tarFileName(req.version, deps.arch!),
  );
  if (!pkg) throw new UpgradeRefused("package_invalid", `orch-agent ${req.version} has no tarball for ${deps.arch}`);

  state("downloading");
  const tarball = await fetchOr(`${base}/${pkg.file}`, t.packageMs ?? 300_000, pkg.size);
  state("verifying");
  const sha = createHash("sha256").update(tarball).digest("hex");
  if (tarball.length !== pkg.size || sha !== pkg.sha256)
    throw new UpgradeRefused(
      "checksum_mismatch",
      `${pkg.file}: got ${tarball.length} bytes sha256 ${sha}, the manifest says ${pkg.size} bytes ${pkg.sha256}`,
    );

  state("unpacking");
  const target = join(layout.releases, req.version);
  const staging = join(layout.releases, `.staging-${req.version}-${req.id.slice(-8) || "x"}`);
  await rm(staging, { recursive: true, force: true });
  await mkdir(staging, { recursive: true, mode: 0o755 });
  try {
    await unpack(tarball, staging, req.version);
    state("smoke_testing");
    await smokeTest(join(staging, "opt/orch-agent/releases", req.version), req.version, t.smokeMs ?? 20_000);
    // A leftover of an earlier attempt (never the running release: that would be already_current).
    await rm(target, { recursive: true, force: true });
    await rename(join(staging, "opt/orch-agent/releases", req.version), target);
  } finally {
    await rm(staging, { recursive: true, force: true });
  }

  if (req.notAfter !== undefined && deps.now() > req.notAfter) {
    await rm(target, { recursive: true, force: true });
    throw new UpgradeRefused("download_failed", "staging took longer than the server waits; nothing switched");
  }
  state("switching");
  const marker: UpgradeMarker = {
    id: req.id,
    from: deps.currentVersion,
    to: req.version,
    from_dir: layout.running,
    deadline_at: deps.now() + req.deadlineSeconds * 1000,
  };
  // Marker first: a crash between the two leaves a marker the old release ignores (its `to` differs).
  await writeMarker(deps.dataDir, marker);
  await switchCurrent(layout, target);
  state("restarting");
  return marker;
}

/** Extracts only `opt/orch-agent/releases/<v>/` (with or without a leading ./) into `dir`. */
async function unpack(tarball: Buffer, dir: string, version: string): Promise<void> {
  const file = join(dir, "package.tar.gz");
  await writeFile(file, tarball, { mode: 0o600 });
  const want = `opt/orch-agent/releases/${version}/`;
  let listing: string;
  try {
    listing = (await run("tar", ["-tzf", file], { maxBuffer: 64 * 1024 * 1024 })).stdout;
  } catch (err) {
    throw new UpgradeRefused("package_invalid", `not a gzip tarball: ${firstLine(err)}`);
  }
  const names = listing.split("\n");
  const dotted = names.some((n) => n.startsWith(`./${want}`));
  if (!dotted && !names.some((n) => n.startsWith(want)))
    throw new UpgradeRefused("package_invalid", `the tarball has no ${want}`);
  // A member names the directory and everything under it (path components, so 1.2.3 is not 1.2.3-rc).
  const member = `${dotted ? "./" : ""}${want.slice(0, -1)}`;
  try {
    await run("tar", ["-xzf", file, "-C", dir, "--no-same-owner", member], { maxBuffer: 16 * 1024 * 1024 });
  } catch (err) {
    throw new UpgradeRefused("package_invalid", `could not unpack: ${firstLine(err)}`);
  }
  await rm(file, { force: true });
  const bin = await stat(join(dir, want, "bin/orch-agent")).catch(() => undefined);
  if (!bin?.isFile()) throw new UpgradeRefused("package_invalid", `the release has no bin/orch-agent`);
}

/** The new release must start far enough to print its version. */
async function smokeTest(releaseDir: string, version: string, timeoutMs: number): Promise<void> {
  let out: string;
  try {
    out = (await run(join(releaseDir, "bin/orch-agent"), ["--version"], { timeout: timeoutMs })).stdout;
  } catch (err) {
    throw new UpgradeRefused("package_invalid", `bin/orch-agent --version failed: ${firstLine(err)}`);
  }
  if (!out.includes(version))
    throw new UpgradeRefused("package_invalid", `bin/orch-agent --version printed '${out.trim()}', not ${version}`);
}

const firstLine = (err: unknown) =>
  String((err as { stderr?: string }).stderr || (err as Error).message)
    .trim()
    .split("\n")[0];
