import { randomBytes } from "node:crypto";
import { chmod, chown, lchown, mkdir, open, readdir, rename, rm, symlink } from "node:fs/promises";
import { join, posix } from "node:path";
import { ArchiveError, readArchive } from "@orch/kit/archive";
import type { ResolvedOwner } from "../ownership.js";
import { SpecError } from "../types.js";
import type { RecordEntry } from "./archive-record.js";
import { lstatOrNull } from "../lstat.js";

// How an `archive` resource writes: the whole archive is first extracted into a private temp
// directory inside the destination (the same filesystem even when the destination is a mount
// point, so every later move is a rename), and only an archive read to its end without a refusal
// is moved into place. A refusal (@orch/kit/archive: unsafe paths and links, bombs, damage) leaves
// the destination as it was: only the temp directory was written, and it is removed.

/** The temp directories' prefix: a leftover from a crashed apply is removed by `clean`. */
export const TEMP_PREFIX = ".orch-archive-";

const parentOf = (rel: string) => posix.dirname(rel).replace(/^\.$/, "");

/** A fresh private directory in `dest` to extract into (after removing any a crashed apply left). */
export async function makeTemp(dest: string): Promise<string> {
  for (const name of await readdir(dest))
    if (name.startsWith(TEMP_PREFIX)) await rm(join(dest, name), { recursive: true, force: true });
  const tmp = join(dest, `${TEMP_PREFIX}${randomBytes(6).toString("hex")}`);
  await mkdir(tmp, { mode: 0o700 });
  return tmp;
}

/**
 * Extracts the archive `file` into `tmp`; returns what it made, parents before children (a parent
 * the archive implies without an entry is a 0755 directory). Files and links get the wanted owner
 * here, before they become visible; directories get theirs in placeInto. A refusal is a SpecError
 * naming the code and entry, with `tmp` removed.
 */
export async function extractTo(
  tmp: string,
  file: string,
  digest: string,
  dest: string,
  ids: ResolvedOwner,
): Promise<RecordEntry[]> {
  const made = new Map<string, RecordEntry>();
  const parents = async (rel: string) => {
    const missing: string[] = [];
    for (let d = parentOf(rel); d !== "" && !made.has(d); d = parentOf(d)) missing.unshift(d);
    for (const d of missing) {
      await mkdir(join(tmp, d), { mode: 0o700 });
      made.set(d, { kind: "directory", path: d, mode: 0o755 });
    }
  };
  const owned = ids.uid !== undefined || ids.gid !== undefined;
  try {
    for await (const e of readArchive(file)) {
      const to = join(tmp, e.path);
      await parents(e.path);
      if (e.kind === "directory") {
        // Made already as a parent of an earlier entry: its own entry brings its mode.
        if (!made.has(e.path)) await mkdir(to, { mode: 0o700 });
        made.set(e.path, { kind: "directory", path: e.path, mode: e.mode });
      } else if (e.kind === "symlink") {
        await symlink(e.target, to);
        if (owned) await lchown(to, ids.uid ?? -1, ids.gid ?? -1);
        made.set(e.path, { kind: "symlink", path: e.path, target: e.target });
      } else {
        const fh = await open(to, "wx", 0o600);
        try {
          for await (const chunk of e.stream())
            for (let done = 0; done < chunk.length; ) done += (await fh.write(chunk, done)).bytesWritten;
          if (owned) await fh.chown(ids.uid ?? -1, ids.gid ?? -1);
          await fh.chmod(e.mode); // after chown: chown clears setuid/setgid bits
        } finally {
          await fh.close();
        }
        made.set(e.path, { kind: "file", path: e.path, size: e.size, mode: e.mode });
      }
    }
  } catch (err) {
    await rm(tmp, { recursive: true, force: true });
    if (!(err instanceof ArchiveError)) throw err;
    throw new SpecError(`the archive ${digest} was refused (${err.code}): ${err.message}; ${dest} was left as it was`);
  }
  return [...made.values()];
}

/**
 * Moves the extracted entries from `tmp` into `dest`: each directory made real first (whatever is
 * in the destination at that path, a file or a symlink, is replaced, never followed), then each
 * file and link renamed over what is there, then the directories' modes and owners set, deepest
 * first. Writing `a/b` after checking that `a` is a real directory in `dest` means no symlink
 * already in the destination can lead a write out of it.
 */
export async function placeInto(tmp: string, dest: string, entries: RecordEntry[], ids: ResolvedOwner): Promise<void> {
  const real = new Set<string>([""]);
  const realDir = async (rel: string): Promise<void> => {
    if (real.has(rel)) return;
    await realDir(parentOf(rel));
    const p = join(dest, rel);
    const st = await lstatOrNull(p);
    if (!st?.isDirectory()) {
      if (st) await rm(p, { recursive: true, force: true });
      await mkdir(p, { mode: 0o700 });
    }
    real.add(rel);
  };
  const dirs = entries.filter((e) => e.kind === "directory");
  for (const d of dirs) await realDir(d.path);
  for (const e of entries) {
    if (e.kind === "directory") continue;
    await realDir(parentOf(e.path));
    const to = join(dest, e.path);
    if ((await lstatOrNull(to))?.isDirectory()) await rm(to, { recursive: true, force: true });
    await rename(join(tmp, e.path), to);
  }
  const owned = ids.uid !== undefined || ids.gid !== undefined;
  for (const d of [...dirs].reverse()) {
    const p = join(dest, d.path);
    if (owned) await chown(p, ids.uid ?? -1, ids.gid ?? -1);
    await chmod(p, d.mode);
  }
}

/**
 * Paths under `dest` that are not the archive's (`entries`), without following symlinks: what
 * `clean: true` removes. A directory that is not the archive's is one path (removed whole).
 */
export async function extrasIn(dest: string, entries: readonly RecordEntry[]): Promise<string[]> {
  const kinds = new Map(entries.map((e) => [e.path, e.kind]));
  const out: string[] = [];
  const walk = async (rel: string) => {
    let names: string[];
    try {
      names = (await readdir(join(dest, rel))).sort();
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === "ENOENT" || code === "ENOTDIR") return;
      throw e;
    }
    for (const name of names) {
      const child = rel === "" ? name : `${rel}/${name}`;
      const kind = kinds.get(child);
      if (kind === undefined) out.push(child);
      else if (kind === "directory" && (await lstatOrNull(join(dest, child)))?.isDirectory()) await walk(child);
    }
  };
  await walk("");
  return out;
}

/** Removes what extrasIn found (a symlink itself, never what it points to). */
export async function removeExtras(dest: string, extras: readonly string[]): Promise<void> {
  for (const rel of extras) await rm(join(dest, rel), { recursive: true, force: true });
}
