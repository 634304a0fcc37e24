/**
 * Lays out the package tree under a staging root, exactly as installed (docs/agent-install.md
 * § Packages): opt/orch-agent/releases/<v>/..., opt/orch-agent/current, usr/bin/orch-agent,
 * lib/systemd/system/orch-agent.service, etc/orch-agent/, and DEBIAN/ for dpkg-deb.
 */
import { chmodSync, cpSync, lstatSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { AGENT_CONFIG_DIR, AGENT_INSTALL_ROOT } from "@orch/contracts";
import { bundleAgent, copyNodePty, type BundleResult } from "./bundle.js";
import { control, POSTINST, POSTRM, PRERM, UNIT, UNIT_NAME, WRAPPER } from "./debian.js";
import type { NodeRuntime } from "./runtime.js";

export interface Tree {
  root: string;
  /** The release dir inside root (opt/orch-agent/releases/<v>). */
  release: string;
  bundle: BundleResult;
}

const rel = (abs: string) => abs.replace(/^\//, "");

export async function layTree(o: { repo: string; root: string; version: string; runtime: NodeRuntime }): Promise<Tree> {
  const install = join(o.root, rel(AGENT_INSTALL_ROOT));
  const release = join(install, "releases", o.version);
  const bundle = await bundleAgent(o.repo, join(release, "lib/orch-agent.mjs"));
  copyNodePty(o.repo, join(release, "lib"));
  mkdirSync(join(release, "node/bin"), { recursive: true });
  cpSync(o.runtime.node, join(release, "node/bin/node"));
  cpSync(o.runtime.license, join(release, "node/LICENSE"));
  // agent/src/version.ts reads ../package.json from the bundle: this is AGENT_VERSION.
  writeFileSync(join(release, "package.json"), `${JSON.stringify({ name: "orch-agent", version: o.version })}\n`);
  mkdirSync(join(release, "bin"), { recursive: true });
  writeFileSync(join(release, "bin/orch-agent"), WRAPPER);
  symlinkSync(`releases/${o.version}`, join(install, "current"));

  mkdirSync(join(o.root, "usr/bin"), { recursive: true });
  symlinkSync(`${AGENT_INSTALL_ROOT}/current/bin/orch-agent`, join(o.root, "usr/bin/orch-agent"));
  mkdirSync(join(o.root, "lib/systemd/system"), { recursive: true });
  writeFileSync(join(o.root, "lib/systemd/system", UNIT_NAME), UNIT);
  mkdirSync(join(o.root, rel(AGENT_CONFIG_DIR)), { recursive: true });
  normaliseModes(o.root);
  for (const exe of ["bin/orch-agent", "node/bin/node"]) chmodSync(join(release, exe), 0o755);

  const debian = join(o.root, "DEBIAN");
  mkdirSync(debian, { mode: 0o755 });
  const installedKiB = Math.ceil(treeBytes(o.root, new Set([debian])) / 1024);
  writeFileSync(
    join(debian, "control"),
    control({ version: o.version, nodeVersion: `v${o.runtime.version}`, installedKiB }),
  );
  for (const [name, text] of [
    ["postinst", POSTINST],
    ["prerm", PRERM],
    ["postrm", POSTRM],
  ] as const)
    writeFileSync(join(debian, name), text, { mode: 0o755 });
  chmodSync(debian, 0o755);
  return { root: o.root, release, bundle };
}

/** 0755 directories, 0644 files whatever the umask or the source's modes (executables set after). */
function normaliseModes(dir: string): void {
  chmodSync(dir, 0o755);
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isSymbolicLink()) continue;
    if (e.isDirectory()) normaliseModes(p);
    else chmodSync(p, 0o644);
  }
}

function treeBytes(dir: string, skip: Set<string>): number {
  let n = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (skip.has(p)) continue;
    if (e.isDirectory()) n += treeBytes(p, skip);
    else n += lstatSync(p).size;
  }
  return n;
}

/**
 * What the tarball lists, relative to /: every entry of our own directories, but only the files
 * (not the directories) in shared ones. A tar entry for `lib/` or `usr/bin/` would make `tar -x -C /`
 * replace a merged-/usr symlink such as /lib → usr/lib with a directory.
 */
export function tarMembers(root: string): string[] {
  const out: string[] = [];
  const walk = (relDir: string) => {
    out.push(relDir);
    for (const e of readdirSync(join(root, relDir), { withFileTypes: true }).sort((a, b) =>
      a.name < b.name ? -1 : 1,
    )) {
      const p = `${relDir}/${e.name}`;
      if (e.isDirectory()) walk(p);
      else out.push(p);
    }
  };
  walk(rel(AGENT_INSTALL_ROOT));
  walk(rel(AGENT_CONFIG_DIR));
  out.push(`lib/systemd/system/${UNIT_NAME}`, "usr/bin/orch-agent");
  return out;
}
