import { randomBytes } from "node:crypto";
import { rename, symlink, unlink } from "node:fs/promises";
import { basename, dirname, join, resolve } from "node:path";

/**
 * Where this agent is installed, from ORCH_AGENT_RELEASE_DIR (set by the package's bin wrapper):
 * `<root>/releases/<version>` with `<root>/current -> releases/<version>`. Undefined when the agent
 * does not run from an installed package (a repo checkout, `npm run agent`): it cannot upgrade.
 */
export interface InstallLayout {
  root: string;
  releases: string;
  current: string;
  /** The release this process runs from (absolute). */
  running: string;
}

export function installLayout(releaseDir: string | undefined): InstallLayout | undefined {
  if (!releaseDir) return undefined;
  const running = resolve(releaseDir);
  const releases = dirname(running);
  if (basename(releases) !== "releases") return undefined;
  const root = dirname(releases);
  return { root, releases, current: join(root, "current"), running };
}

/**
 * Points `<root>/current` at `releaseDir` atomically: a new relative symlink renamed over the old
 * one, so at every instant `current` is either the old release or the new one.
 */
export async function switchCurrent(layout: InstallLayout, releaseDir: string): Promise<void> {
  const tmp = join(layout.root, `.current-${randomBytes(6).toString("hex")}`);
  await symlink(join("releases", basename(releaseDir)), tmp);
  try {
    await rename(tmp, layout.current);
  } catch (err) {
    await unlink(tmp).catch(() => undefined);
    throw err;
  }
}
