import { createHash } from "node:crypto";
import { mkdir, readFile } from "node:fs/promises";
import { join } from "node:path";
import { atomicWrite } from "../atomic-write.js";

/**
 * What an `archive` resource extracted, kept in the agent's data directory
 * (`<data dir>/archives/<sha256 of the destination>.json`, 0600 in a 0700 directory) rather than in
 * the destination: a file there would be part of the tree the module manages (and `clean` would
 * have to spare it), and anyone who can write the destination could forge it. Written last, after
 * a whole extraction, so a record always describes a complete one.
 */
export interface ArchiveRecord {
  version: 1;
  /** The destination directory. */
  path: string;
  /** The blob extracted: `sha256:<hex>`. */
  digest: string;
  /** Every path the archive made, parents before children ("" never: the destination itself). */
  entries: RecordEntry[];
}

export type RecordEntry =
  | { kind: "file"; path: string; size: number; mode: number }
  | { kind: "directory"; path: string; mode: number }
  | { kind: "symlink"; path: string; target: string };

export const recordsDir = (dataDir: string) => join(dataDir, "archives");

const recordFile = (dir: string, path: string) => join(dir, `${createHash("sha256").update(path).digest("hex")}.json`);

/** The record of the last extraction into `path`, or undefined (none, or unreadable: extracted again). */
export async function loadRecord(dir: string, path: string): Promise<ArchiveRecord | undefined> {
  let text: string;
  try {
    text = await readFile(recordFile(dir, path), "utf8");
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
  try {
    const r = JSON.parse(text) as Partial<ArchiveRecord>;
    if (r.version !== 1 || r.path !== path || typeof r.digest !== "string" || !Array.isArray(r.entries))
      return undefined;
    return r as ArchiveRecord;
  } catch {
    return undefined;
  }
}

export async function saveRecord(dir: string, record: ArchiveRecord): Promise<void> {
  await mkdir(dir, { recursive: true, mode: 0o700 });
  await atomicWrite(recordFile(dir, record.path), `${JSON.stringify(record)}\n`, 0o600, undefined, undefined);
}
