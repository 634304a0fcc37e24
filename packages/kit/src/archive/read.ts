import { ArchiveError } from "./errors.js";
import { detectArchiveFormat, readHead } from "./format.js";
import { InflateBudget, resolveLimits } from "./limits.js";
import { readTar } from "./tar.js";
import { Tree } from "./tree.js";
import type { ArchiveEntry, ArchiveLimits } from "./types.js";
import { readZip } from "./zip.js";

/**
 * The entries of a tar, tar.gz or zip file (detected by its first bytes), in archive order, each
 * checked before it is yielded: a refusal is an ArchiveError naming its code and entry. Breaking
 * out of the loop closes the file. A consumer that writes entries somewhere must treat a refusal
 * at any point, even after the last entry, as a refusal of the whole archive.
 */
export function readArchive(file: string, limits?: Partial<ArchiveLimits>): AsyncIterable<ArchiveEntry> {
  return read(file, resolveLimits(limits));
}

async function* read(file: string, limits: ArchiveLimits): AsyncGenerator<ArchiveEntry> {
  const { head, size } = await readHead(file);
  const format = detectArchiveFormat(head);
  if (format === undefined)
    throw new ArchiveError("unknown_format", "the file is not a tar, tar.gz or zip archive (by its first bytes)");
  const budget = new InflateBudget(limits, size);
  const tree = new Tree();
  if (format === "zip") yield* readZip(file, budget, tree);
  else yield* readTar(file, format === "tar.gz", budget, tree);
}
