import { readFile, rm } from "node:fs/promises";
import { join } from "node:path";
import { atomicWrite } from "../state/atomic-write.js";

/**
 * `<data dir>/upgrade.json`: written just before `current` is switched, read by the new release on
 * start (watchdog.ts) to know it is on probation and where to switch back to.
 */
export interface UpgradeMarker {
  id: string;
  from: string;
  to: string;
  /** Absolute directory of the release to switch back to. */
  from_dir: string;
  /** Unix ms: the new release must have a link up by then. */
  deadline_at: number;
}

export const markerPath = (dataDir: string) => join(dataDir, "upgrade.json");

export async function readMarker(dataDir: string): Promise<UpgradeMarker | undefined> {
  let text: string;
  try {
    text = await readFile(markerPath(dataDir), "utf8");
  } catch {
    return undefined;
  }
  try {
    const m = JSON.parse(text) as Partial<UpgradeMarker>;
    if (typeof m.to !== "string" || typeof m.from_dir !== "string" || typeof m.deadline_at !== "number")
      return undefined;
    return {
      id: String(m.id ?? ""),
      from: String(m.from ?? ""),
      to: m.to,
      from_dir: m.from_dir,
      deadline_at: m.deadline_at,
    };
  } catch {
    return undefined;
  }
}

export const writeMarker = (dataDir: string, m: UpgradeMarker) =>
  atomicWrite(markerPath(dataDir), `${JSON.stringify(m, null, 2)}\n`, 0o600, undefined, undefined);

export const removeMarker = (dataDir: string) => rm(markerPath(dataDir), { force: true });
