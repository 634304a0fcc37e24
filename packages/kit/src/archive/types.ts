/** The archive formats readArchive reads (detected by magic bytes, never by file name). */
export type ArchiveFormat = "tar" | "tar.gz" | "zip";

/** Bounds on what one archive may inflate to: an archive is untrusted input. */
export interface ArchiveLimits {
  /** Entries of any kind (files, directories, links). */
  maxEntries: number;
  /** Inflated bytes, counted as they flow (never from headers). */
  maxBytes: number;
  /** Inflated bytes per byte of the archive file, checked once inflated bytes pass RATIO_FLOOR. */
  maxRatio: number;
}

/**
 * One entry, in archive order. `path` is normalised: relative, '/'-separated, no leading "./",
 * no trailing "/", no "." or ".." segment, never empty. A file's `stream()` yields its bytes; read
 * it to the end or not at all (moving on to the next entry skips what is left), and only before
 * moving on. `size` is the size the archive declares: the stream fails (`corrupt`) when the bytes
 * do not match it.
 */
export type ArchiveEntry =
  | { kind: "file"; path: string; mode: number; size: number; stream(): AsyncIterable<Uint8Array> }
  | { kind: "directory"; path: string; mode: number }
  /** `target`: the link text as stored; the reader has already checked it stays inside the tree. */
  | { kind: "symlink"; path: string; target: string };
