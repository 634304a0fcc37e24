import type { Stats } from "node:fs";
import { lstat, readlink } from "node:fs/promises";
import { join } from "node:path";
import { fmtMode } from "../spec.js";
import type { ResolvedOwner } from "../ownership.js";
import type { RecordEntry } from "./archive-record.js";

/** How many drifted or extra paths a diff names before it only counts the rest. */
export const DIFF_PATHS = 20;

const kindOf = (st: Stats) =>
  st.isSymbolicLink() ? "symlink" : st.isDirectory() ? "directory" : st.isFile() ? "file" : "special file";

/**
 * How the extracted tree differs from what the last extraction recorded, one line per path
 * (`missing a/b`, `a/b: size 10, the archive's 12`, ...), in archive order. Sizes, modes, link
 * targets and, when the resource names them, owner and group: files are not hashed (a tree may be
 * gigabytes); a file changed in place at the same size and mode goes unnoticed until the digest
 * changes.
 */
export async function driftOf(
  dest: string,
  entries: readonly RecordEntry[],
  ids: ResolvedOwner,
  want: { owner?: string | undefined; group?: string | undefined },
): Promise<string[]> {
  const out: string[] = [];
  for (const e of entries) {
    let st: Stats;
    try {
      st = await lstat(join(dest, e.path));
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code !== "ENOENT" && code !== "ENOTDIR") throw err;
      out.push(`missing ${e.path}`);
      continue;
    }
    if (kindOf(st) !== e.kind) {
      out.push(`${e.path}: a ${kindOf(st)}, the archive's is a ${e.kind}`);
      continue;
    }
    if (e.kind === "file" && st.size !== e.size) out.push(`${e.path}: ${st.size} bytes, the archive's ${e.size}`);
    else if (e.kind === "symlink") {
      const target = await readlink(join(dest, e.path));
      if (target !== e.target) out.push(`${e.path}: links to ${target}, the archive's to ${e.target}`);
    } else if ((st.mode & 0o7777) !== e.mode)
      out.push(`${e.path}: mode ${fmtMode(st.mode)}, the archive's ${fmtMode(e.mode)}`);
    else if (want.owner !== undefined && st.uid !== ids.uid) out.push(`${e.path}: owner is not ${want.owner}`);
    else if (want.group !== undefined && st.gid !== ids.gid) out.push(`${e.path}: group is not ${want.group}`);
  }
  return out;
}

/** At most DIFF_PATHS of `lines`, then how many more. */
export function capped(lines: readonly string[]): string[] {
  if (lines.length <= DIFF_PATHS) return [...lines];
  return [...lines.slice(0, DIFF_PATHS), `... and ${lines.length - DIFF_PATHS} more`];
}
