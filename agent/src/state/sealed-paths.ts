import { readFile, realpath } from "node:fs/promises";
import { join } from "node:path";
import { sealKey } from "@orch/contracts";
import { atomicWrite } from "./atomic-write.js";

/**
 * The managed paths this agent wrote from content rendered with a secret. An operation that did not
 * resolve that secret (another operator's plan of the same path, a drift check of another module)
 * has nothing to mask it with, so what it reports of these paths is sealed: sizes, never content.
 * Kept in the data directory (paths only, never content) so a restart does not unseal them.
 */
export interface SealedPaths {
  /** Whether `path`, or the file it resolves to through symlinks, is sealed. */
  has(path: string): Promise<boolean>;
  /** Seals paths (persisted before it resolves). */
  add(paths: readonly string[]): Promise<void>;
  /** Unseals paths a resource without secrets has rewritten whole or removed. */
  remove(paths: readonly string[]): Promise<void>;
}

export const sealedPathsFile = (dataDir: string) => join(dataDir, "sealed-paths.json");

interface Stored {
  version: 1;
  paths: string[];
}

export interface SealedPathsDeps {
  /** Where the set is kept; absent = in memory only (tests of pure logic). */
  file?: string;
  /** Told when the set cannot be saved: it then holds for this process only. */
  onSaveError: (err: Error) => void;
}

async function readStored(file: string): Promise<Set<string>> {
  let text: string;
  try {
    text = await readFile(file, "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return new Set();
    throw e;
  }
  const data = JSON.parse(text) as Partial<Stored>;
  return new Set(Array.isArray(data.paths) ? data.paths.filter((p) => typeof p === "string").map(sealKey) : []);
}

export async function loadSealedPaths(deps: SealedPathsDeps): Promise<SealedPaths> {
  const file = deps.file;
  let paths: Set<string>;
  try {
    paths = file ? await readStored(file) : new Set();
  } catch (err) {
    // A corrupt file must not unseal anything silently; starting empty is the best left, and said.
    deps.onSaveError(err as Error);
    paths = new Set();
  }
  const save = async () => {
    if (!file) return;
    const data: Stored = { version: 1, paths: [...paths].sort() };
    try {
      await atomicWrite(file, `${JSON.stringify(data)}\n`, 0o600, undefined, undefined);
    } catch (err) {
      deps.onSaveError(err as Error);
    }
  };
  return {
    async has(path) {
      if (paths.size === 0) return false;
      if (paths.has(sealKey(path))) return true;
      // A symlink (or a path through one) to a sealed file reads the same content.
      const real = await realpath(path).catch(() => null);
      return real !== null && paths.has(sealKey(real));
    },
    async add(list) {
      const before = paths.size;
      for (const p of list) {
        paths.add(sealKey(p));
        // The file itself, where a directory on the way is a symlink.
        const real = await realpath(p).catch(() => null);
        if (real !== null) paths.add(sealKey(real));
      }
      if (paths.size !== before) await save();
    },
    async remove(list) {
      let changed = false;
      for (const p of list) changed = paths.delete(sealKey(p)) || changed;
      if (changed) await save();
    },
  };
}
