import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import type { ApplyResult, CheckResult } from "../types.js";
import { applyText, checkText, NEW_FILE_MODE } from "./text-edit.js";

/**
 * Whole files a system resource owns (a repository's list and its key, a sysctl.d file, a unit
 * file): each is planned and written like a text resource's file, and the resource's result is
 * their sum, in order. `next: null` removes the file.
 */
export interface OwnedFile {
  path: string;
  next: string | null;
  /** Default 0644: these files are read by tools running as other users (apt's _apt, yum). */
  mode?: number;
  /** Created with its parents (mode 0755) when missing, e.g. /etc/apt/keyrings on an older system. */
  makeDir?: boolean;
}

/** The managed header every owned file starts with, so a person editing it knows it is reverted. */
export const managedHeader = (type: string) =>
  `# Managed by orch (${type} resource): edits here are reverted by the next apply.`;

const desired = (f: OwnedFile) => () => ({
  next: f.next,
  ...(f.next === null ? {} : { mode: f.mode ?? NEW_FILE_MODE }),
});

export async function checkFiles(files: readonly OwnedFile[]): Promise<CheckResult> {
  const out: CheckResult = { changed: false, diff: "", observed: {} };
  for (const f of files) {
    const r = await checkText(f.path, desired(f));
    out.changed ||= r.changed;
    out.diff += r.diff;
    out.observed[f.path] = r.observed;
  }
  return out;
}

export async function applyFiles(files: readonly OwnedFile[]): Promise<ApplyResult> {
  const out: ApplyResult = { changed: false, diff: "", message: "", stdout: "", stderr: "", observed: {} };
  const done: string[] = [];
  for (const f of files) {
    if (f.makeDir && f.next !== null) await mkdir(dirname(f.path), { recursive: true, mode: 0o755 });
    const r = await applyText(f.path, desired(f));
    out.observed[f.path] = r.observed;
    if (!r.changed) continue;
    out.changed = true;
    out.diff += r.diff;
    done.push(`${f.path} ${r.message}`);
  }
  out.message = done.join(", ");
  return out;
}
