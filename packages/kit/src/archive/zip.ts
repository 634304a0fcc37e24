import type { Readable } from "node:stream";
import { crc32 } from "node:zlib";
import yauzl, { type Entry, type ZipFile } from "yauzl";
import { ArchiveError, asArchiveError } from "./errors.js";
import type { InflateBudget } from "./limits.js";
import { entryPath } from "./paths.js";
import type { Tree } from "./tree.js";
import type { ArchiveEntry } from "./types.js";

/** A link's target is its entry's content: a path, never more than this. */
const MAX_LINK_TARGET = 4096;

const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;
/** "Version made by" hosts whose external attributes hold a Unix mode: Unix, macOS. */
const UNIX_HOSTS = new Set([3, 19]);
/** The MS-DOS directory attribute, set by non-Unix zip tools. */
const DOS_DIRECTORY = 0x10;
/** Stored and deflated: what every zip tool writes; anything else is refused, not guessed at. */
const METHODS = new Set([0, 8]);

function openZip(file: string): Promise<ZipFile> {
  return new Promise((resolve, reject) => {
    // Names are decoded and checked here (entryPath), so that a refusal says unsafe_path and which
    // entry; validateEntrySizes makes a declared size that the bytes do not match an error.
    yauzl.open(
      file,
      { lazyEntries: true, autoClose: false, decodeStrings: false, validateEntrySizes: true, strictFileNames: true },
      (err, zip) => (err ? reject(asArchiveError(err, undefined)) : resolve(zip)),
    );
  });
}

/** The next central directory entry, or undefined at the end. */
function nextEntry(zip: ZipFile): Promise<Entry | undefined> {
  return new Promise((resolve, reject) => {
    const done = () => {
      zip.off("entry", onEntry);
      zip.off("end", onEnd);
      zip.off("error", onError);
    };
    const onEntry = (e: Entry) => {
      done();
      resolve(e);
    };
    const onEnd = () => {
      done();
      resolve(undefined);
    };
    const onError = (e: Error) => {
      done();
      reject(asArchiveError(e, undefined));
    };
    zip.on("entry", onEntry);
    zip.on("end", onEnd);
    zip.on("error", onError);
    zip.readEntry();
  });
}

/**
 * A zip read entry by entry with yauzl (lazyEntries): names from the central directory, each
 * file's bytes inflated only when its stream is read, counted as they come, and checked against
 * the declared size (yauzl) and CRC-32 (here). An entry that is not read is never inflated.
 */
export async function* readZip(file: string, budget: InflateBudget, tree: Tree): AsyncGenerator<ArchiveEntry> {
  const zip = await openZip(file);
  // yauzl emits an error at most once; one outside nextEntry (closing the fd) must not crash.
  zip.on("error", () => {});
  let open: Readable | undefined;
  try {
    for (;;) {
      open?.destroy();
      open = undefined;
      const e = await nextEntry(zip);
      if (!e) break;
      const entry = await toEntry(zip, e, budget, tree, (s) => {
        open = s;
      });
      if (entry) yield entry;
    }
    tree.finish();
  } finally {
    open?.destroy();
    zip.close();
  }
}

async function toEntry(
  zip: ZipFile,
  e: Entry,
  budget: InflateBudget,
  tree: Tree,
  opened: (s: Readable) => void,
): Promise<ArchiveEntry | undefined> {
  // decodeStrings: false leaves the raw name; decoded as yauzl would (UTF-8 flag, Info-ZIP
  // Unicode path field), without turning backslashes into separators.
  const name = yauzl.getFileNameLowLevel(e.generalPurposeBitFlag, e.fileName as unknown as Buffer, e.extraFields, true);
  budget.entry(name);
  const path = entryPath(name, true);
  const unixMode = UNIX_HOSTS.has(e.versionMadeBy >> 8) ? e.externalFileAttributes >>> 16 : 0;
  const type = unixMode & S_IFMT;
  const perm = unixMode & 0o7777;
  const dirName = name.endsWith("/");
  const unsupported = (why: string) => new ArchiveError("unsupported_entry", why, name);
  const isDir = type === S_IFDIR || (type === 0 && (dirName || (e.externalFileAttributes & DOS_DIRECTORY) !== 0));
  if (isDir) {
    if (path === "") return undefined;
    tree.add("directory", path, name);
    return { kind: "directory", path, mode: perm || 0o755 };
  }
  if (type !== 0 && type !== S_IFREG && type !== S_IFLNK)
    throw unsupported(`its Unix file type 0${type.toString(8)} is not a file, directory or symlink`);
  if (dirName) throw unsupported("it is named like a directory but is not one");
  if (path === "") throw new ArchiveError("unsafe_path", "the entry names the tree's root itself", name);
  if (e.isEncrypted()) throw unsupported("encrypted entries are not supported");
  if (!METHODS.has(e.compressionMethod))
    throw unsupported(`compression method ${e.compressionMethod} is not supported (only stored and deflate)`);
  if (type === S_IFLNK) {
    if (e.uncompressedSize > MAX_LINK_TARGET)
      throw new ArchiveError("unsafe_link", `the link's target is over ${MAX_LINK_TARGET} bytes`, name);
    const parts: Uint8Array[] = [];
    for await (const c of entryBytes(zip, e, name, budget, opened)) parts.push(c);
    const target = Buffer.concat(parts).toString("utf8");
    tree.add("symlink", path, name, target);
    return { kind: "symlink", path, target };
  }
  tree.add("file", path, name);
  let started = false;
  return {
    kind: "file",
    path,
    mode: perm || 0o644,
    size: e.uncompressedSize,
    stream: () => {
      if (started) throw new Error(`the bytes of ${name} were read already`);
      started = true;
      return entryBytes(zip, e, name, budget, opened);
    },
  };
}

async function* entryBytes(
  zip: ZipFile,
  e: Entry,
  name: string,
  budget: InflateBudget,
  opened: (s: Readable) => void,
): AsyncGenerator<Uint8Array> {
  let stream: Readable;
  try {
    stream = await zip.openReadStreamPromise(e);
  } catch (err) {
    throw asArchiveError(err, name);
  }
  opened(stream);
  let got = 0;
  let crc = 0;
  try {
    for await (const c of stream) {
      const chunk = c as Buffer;
      budget.take(chunk.length, name);
      got += chunk.length;
      crc = crc32(chunk, crc);
      yield chunk;
    }
  } catch (err) {
    throw asArchiveError(err, name);
  } finally {
    stream.destroy();
  }
  // yauzl has checked the count already (validateEntrySizes); this keeps the rule in one place.
  if (got !== e.uncompressedSize)
    throw new ArchiveError("corrupt", `it declares ${e.uncompressedSize} bytes but has ${got}`, name);
  if (crc >>> 0 !== e.crc32 >>> 0) throw new ArchiveError("corrupt", "its bytes do not match its CRC-32", name);
}
