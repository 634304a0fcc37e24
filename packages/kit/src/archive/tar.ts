import { once } from "node:events";
import { createReadStream } from "node:fs";
import { pipeline, type Readable } from "node:stream";
import { createGunzip } from "node:zlib";
import { Parser } from "tar/parse";
import type { ReadEntry } from "tar/read-entry";
import { ArchiveError, asArchiveError } from "./errors.js";
import type { InflateBudget } from "./limits.js";
import { entryPath } from "./paths.js";
import type { Tree } from "./tree.js";
import type { ArchiveEntry } from "./types.js";

/** Read size from the file: one chunk is the most the parser ever holds beyond what is being read. */
const READ_CHUNK = 64 * 1024;

/** An entry node-tar's parser emitted, and the bytes it pushed into it that are not read yet. */
interface Pending {
  entry: ReadEntry;
  chunks: Buffer[];
  ended: boolean;
  /** The consumer moved past it: its remaining bytes are dropped as they come. */
  skipped: boolean;
}

/**
 * A tar (plain, or gzip: inflated here by zlib so that every inflated byte is counted before the
 * parser sees it) read entry by entry with node-tar's streaming Parser in strict mode (a bad
 * checksum, a truncated body or an unknown archive is an error, not a warning). Pull-driven: a
 * chunk of the file is read only when the consumer needs the next entry or more of a file's bytes,
 * so memory holds at most one chunk, whatever the archive's size.
 */
export async function* readTar(
  file: string,
  gzip: boolean,
  budget: InflateBudget,
  tree: Tree,
): AsyncGenerator<ArchiveEntry> {
  const raw = createReadStream(file, { highWaterMark: READ_CHUNK });
  const source: Readable = gzip ? pipeline(raw, createGunzip({ chunkSize: READ_CHUNK }), () => {}) : raw;
  const chunks = source[Symbol.asyncIterator]();
  const parser = new Parser({ strict: true, zstd: false, brotli: false });
  const queue: Pending[] = [];
  /** The name of the entry the parser is in, for errors found by counting or decoding. */
  let current: string | undefined;
  let failure: ArchiveError | undefined;
  let sourceDone = false;
  let parserDone = false;
  const fail = (e: unknown) => {
    failure ??= asArchiveError(e, current);
    return failure;
  };

  parser.on("entry", (entry: ReadEntry) => {
    const p: Pending = { entry, chunks: [], ended: entry.emittedEnd, skipped: false };
    current = entry.path;
    entries++;
    queue.push(p);
    entry.on("data", (c: Buffer) => {
      if (!p.skipped) p.chunks.push(c);
    });
    entry.on("end", () => {
      p.ended = true;
    });
  });
  // Types node-tar does not know (sparse files, tape volumes, ...), and oversized metadata.
  parser.on("ignoredEntry", (entry: ReadEntry) => {
    fail(
      entry.meta
        ? new ArchiveError("corrupt", `its ${entry.type} header is ${entry.size} bytes, too large`, entry.path)
        : new ArchiveError("unsupported_entry", `${entry.type} entries are not supported`, entry.path),
    );
  });
  // Two zero blocks before any entry: an empty archive (`tar cf x.tar -T /dev/null`), which
  // node-tar calls unrecognised.
  let sawEof = false;
  let entries = 0;
  parser.on("eof", () => {
    sawEof = true;
  });
  parser.on("error", (e: Error & { tarCode?: string }) => {
    if (!(sawEof && entries === 0 && e.tarCode === "TAR_BAD_ARCHIVE")) fail(e);
  });
  parser.on("end", () => {
    parserDone = true;
  });

  /** Feeds the parser one more chunk (or its end); false once there is nothing left to feed. */
  const pump = async (): Promise<boolean> => {
    if (failure) throw failure;
    if (sourceDone) return false;
    try {
      const r = await chunks.next();
      if (r.done) {
        sourceDone = true;
        parser.end();
      } else {
        const chunk = r.value as Buffer;
        budget.take(chunk.length, current);
        parser.write(chunk);
      }
    } catch (e) {
      throw fail(e);
    }
    if (failure) throw failure;
    return true;
  };

  let previous: Pending | undefined;
  try {
    for (;;) {
      if (previous && !previous.ended) {
        previous.skipped = true;
        previous.chunks.length = 0;
      }
      while (queue.length === 0) {
        if (failure) throw failure;
        if (parserDone) {
          tree.finish();
          return;
        }
        if (!(await pump()) && queue.length === 0 && !parserDone)
          throw new ArchiveError("corrupt", "the archive ends in the middle of an entry", current);
      }
      const p = queue.shift()!;
      previous = p;
      const entry = toEntry(p, budget, tree, pump, () => failure);
      if (entry) yield entry;
    }
  } finally {
    for (const p of [previous, ...queue]) if (p) p.skipped = true;
    parser.removeAllListeners();
    parser.on("error", () => {});
    source.destroy();
    raw.destroy();
    if (!raw.closed) await once(raw, "close").catch(() => {});
  }
}

function toEntry(
  p: Pending,
  budget: InflateBudget,
  tree: Tree,
  pump: () => Promise<boolean>,
  failed: () => ArchiveError | undefined,
): ArchiveEntry | undefined {
  const e = p.entry;
  const name = e.path;
  budget.entry(name);
  const path = entryPath(name, false);
  const root = () => new ArchiveError("unsafe_path", "the entry names the tree's root itself", name);
  switch (e.type) {
    case "Directory":
    case "GNUDumpDir":
      if (path === "") return undefined; // "./": the destination itself
      tree.add("directory", path, name);
      return { kind: "directory", path, mode: e.mode ?? 0o755 };
    case "SymbolicLink": {
      if (path === "") throw root();
      const target = e.linkpath ?? "";
      tree.add("symlink", path, name, target);
      return { kind: "symlink", path, target };
    }
    case "File":
    case "OldFile":
    case "ContiguousFile": {
      if (path === "") throw root();
      tree.add("file", path, name);
      const size = e.size;
      let started = false;
      return {
        kind: "file",
        path,
        mode: e.mode ?? 0o644,
        size,
        stream: () => {
          if (started || p.skipped) throw new Error(`the bytes of ${name} were read already or skipped`);
          started = true;
          return fileBytes(p, name, size, pump, failed);
        },
      };
    }
    // Refused rather than resolved: a hard link to an earlier entry would have to be copied, and
    // one to a path outside the tree would expose that file. No release archive needs one.
    case "Link":
      throw new ArchiveError("unsupported_entry", `hard links are not supported (to ${e.linkpath ?? "?"})`, name);
    default:
      throw new ArchiveError("unsupported_entry", `${e.type} entries are not supported`, name);
  }
}

async function* fileBytes(
  p: Pending,
  name: string,
  size: number,
  pump: () => Promise<boolean>,
  failed: () => ArchiveError | undefined,
): AsyncGenerator<Uint8Array> {
  let got = 0;
  for (;;) {
    while (p.chunks.length > 0) {
      if (p.skipped) throw new Error(`the consumer moved past ${name} while reading it`);
      const c = p.chunks.shift()!;
      got += c.length;
      yield c;
    }
    if (p.ended) break;
    if (!(await pump()) && !p.ended && p.chunks.length === 0)
      throw new ArchiveError("corrupt", `the archive ends after ${got} of its ${size} bytes`, name);
  }
  const failure = failed();
  if (failure) throw failure;
  if (got !== size) throw new ArchiveError("corrupt", `it declares ${size} bytes but has ${got}`, name);
}
