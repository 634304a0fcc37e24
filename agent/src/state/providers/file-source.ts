import type { Stats } from "node:fs";
import { stat } from "node:fs/promises";
import { blobHex, sealDiff, sealedContentLine } from "@orch/contracts";
import { sha256OfFile } from "../../blobs/file-digest.js";
import { atomicCopy, CopyDigestMismatch } from "../atomic-write.js";
import { SpecError, type BlobFiles, type Spec } from "../types.js";

// A `file` written from a blob (`source: sha256:…`) rather than inline `content`. Files this big
// are never read whole: the plan hashes the target as a stream, the apply copies from the cache
// as a stream, and only bytes that hash to the digest ever replace the target.

export interface Source {
  digest: string;
  hex: string;
}

export interface ContentChange {
  changed: boolean;
  diff: string;
}

/** The `source` field: a blob digest, or undefined when the spec has none. */
export function optSource(spec: Spec): Source | undefined {
  const v = spec.source;
  if (v === undefined || v === null) return undefined;
  const hex = typeof v === "string" ? blobHex(v) : undefined;
  if (typeof v !== "string" || hex === undefined)
    throw new SpecError(
      `field "source" must be a blob digest: sha256: and 64 lowercase hex digits (got ${JSON.stringify(v)})`,
    );
  return { digest: v, hex };
}

/** The SHA-256 hex of a file, streamed: a managed file may be far larger than memory. */
export async function sha256Hex(path: string): Promise<string> {
  return (await sha256OfFile(path)).slice("sha256:".length);
}

/**
 * Whether the target (`st`, null when absent) differs from the blob, and the diff line saying so.
 * The plan runs before the server ships blobs, so the cache may not hold this one yet: its size is
 * shown, and compared first, only when it does.
 */
export async function planSource(
  path: string,
  st: Stats | null,
  src: Source,
  blobs: BlobFiles,
  sealed: boolean,
): Promise<ContentChange> {
  const size = await cachedSize(blobs, src.digest);
  if (!st) return { changed: true, diff: summary(null, src, size, sealed) };
  // A size mismatch settles it without hashing a possibly huge file.
  const hex = size !== undefined && size !== st.size ? undefined : await sha256Hex(path);
  if (hex === src.hex) return { changed: false, diff: "" };
  return { changed: true, diff: summary({ size: st.size, hex }, src, size, sealed) };
}

/**
 * Replaces the target with the cached blob. The cache verified the blob when it arrived, but its
 * file could have changed since: the copy is hashed as it is written and dropped on a mismatch.
 */
export async function writeSource(
  path: string,
  src: Source,
  blobs: BlobFiles,
  attrs: { mode: number; uid: number | undefined; gid: number | undefined },
): Promise<void> {
  const file = await blobs.path(src.digest);
  if (file === undefined)
    throw new SpecError(`blob ${src.digest} is not in this agent's cache: the server sends it before an apply`);
  try {
    await atomicCopy(file, path, attrs.mode, attrs.uid, attrs.gid, src.hex);
  } catch (e) {
    if (!(e instanceof CopyDigestMismatch)) throw e;
    await blobs.discard(src.digest);
    throw new SpecError(
      `the cached blob ${src.digest} does not match its digest (its bytes hash to sha256:${e.actualHex}); ${path} was left as it was, and the blob was dropped from the cache so that the next apply sends it again`,
    );
  }
}

/** The cached blob's size, or undefined when the cache does not hold it. */
async function cachedSize(blobs: BlobFiles, digest: string): Promise<number | undefined> {
  const file = await blobs.path(digest);
  if (file === undefined) return undefined;
  try {
    return (await stat(file)).size;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return undefined;
    throw e;
  }
}

/**
 * `content sha256:<old> (<n> bytes) -> sha256:<new> (<m> bytes)`, like the summary of any file too
 * big to diff; an old side settled by size alone shows no hash, a blob not cached yet no size. A
 * sealed path (it held a secret) shows sizes only, and not even those when the blob's is unknown.
 */
function summary(
  old: { size: number; hex: string | undefined } | null,
  src: Source,
  size: number | undefined,
  sealed: boolean,
): string {
  if (sealed && size !== undefined) return sealedContentLine(old?.size ?? null, size);
  const before =
    old === null ? "(none)" : old.hex === undefined ? `(${old.size} bytes)` : `sha256:${old.hex} (${old.size} bytes)`;
  const line = `content ${before} -> ${src.digest}${size === undefined ? "" : ` (${size} bytes)`}\n`;
  return sealed ? sealDiff(line) : line;
}
