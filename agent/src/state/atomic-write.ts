import { createHash, randomBytes } from "node:crypto";
import { open, rename, unlink, type FileHandle } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/** Read size of a streaming copy: few syscalls for a big file, one fixed buffer in memory. */
const COPY_CHUNK = 1024 * 1024;

/** A streamed copy whose bytes did not hash to what the caller expected: nothing was replaced. */
export class CopyDigestMismatch extends Error {
  override name = "CopyDigestMismatch";
  constructor(
    readonly expectedHex: string,
    readonly actualHex: string,
  ) {
    super(`the copied bytes hash to sha256:${actualHex}, not sha256:${expectedHex}`);
  }
}

/**
 * Replaces `path` with `data` atomically: a temp file in the same directory, owner and mode set
 * before it becomes visible, fsynced, then renamed over the target, so a reader (or a crash) sees
 * the old file or the new one, never half of one. The temp file is removed on any failure.
 */
export async function atomicWrite(
  path: string,
  data: Buffer | string,
  mode: number,
  uid: number | undefined,
  gid: number | undefined,
): Promise<void> {
  await replaceWith(path, mode, uid, gid, (fh) => fh.writeFile(data));
}

/**
 * Replaces `dest` with a copy of `src` the same atomic way, streaming (a file may be far larger than
 * memory) and hashing what it writes: unless that hash is `expectHex`, the temp file is removed,
 * `dest` is left as it was, and this throws CopyDigestMismatch. The hash is of the bytes written,
 * not of `src` read earlier, so a source changed underneath can never land in `dest`.
 */
export async function atomicCopy(
  src: string,
  dest: string,
  mode: number,
  uid: number | undefined,
  gid: number | undefined,
  expectHex: string,
): Promise<void> {
  // Opened first: a missing source fails before anything is created beside `dest`.
  const from = await open(src, "r");
  try {
    await replaceWith(dest, mode, uid, gid, async (to) => {
      const actual = await copyHashing(from, to);
      if (actual !== expectHex) throw new CopyDigestMismatch(expectHex, actual);
    });
  } finally {
    await from.close();
  }
}

/** Copies `from` to `to` from their current positions; returns the SHA-256 hex of the bytes copied. */
async function copyHashing(from: FileHandle, to: FileHandle): Promise<string> {
  const hash = createHash("sha256");
  const buf = Buffer.allocUnsafe(COPY_CHUNK);
  for (;;) {
    const { bytesRead } = await from.read(buf, 0, buf.length, null);
    if (bytesRead === 0) return hash.digest("hex");
    const piece = buf.subarray(0, bytesRead);
    hash.update(piece);
    await writeAll(to, piece);
  }
}

/** A write may be short; the rest follows until all of `data` is written. */
async function writeAll(fh: FileHandle, data: Buffer): Promise<void> {
  for (let done = 0; done < data.length; ) done += (await fh.write(data, done)).bytesWritten;
}

/** The atomic replacement itself, with `fill` writing the temp file's content. */
async function replaceWith(
  path: string,
  mode: number,
  uid: number | undefined,
  gid: number | undefined,
  fill: (fh: FileHandle) => Promise<void>,
): Promise<void> {
  const tmp = join(dirname(path), `.${basename(path)}.orch-${randomBytes(6).toString("hex")}`);
  let fh: FileHandle | undefined;
  try {
    fh = await open(tmp, "wx", 0o600);
    await fill(fh);
    if (uid !== undefined || gid !== undefined) await fh.chown(uid ?? -1, gid ?? -1);
    await fh.chmod(mode); // after chown: chown clears setuid/setgid bits
    await fh.sync();
    await fh.close();
    fh = undefined;
    await rename(tmp, path);
  } catch (e) {
    await fh?.close().catch(() => {});
    await unlink(tmp).catch(() => {});
    throw e;
  }
}
