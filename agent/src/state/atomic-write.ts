import { randomBytes } from "node:crypto";
import { open, rename, unlink, type FileHandle } from "node:fs/promises";
import { basename, dirname, join } from "node:path";

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
  const tmp = join(dirname(path), `.${basename(path)}.orch-${randomBytes(6).toString("hex")}`);
  let fh: FileHandle | undefined;
  try {
    fh = await open(tmp, "wx", 0o600);
    await fh.writeFile(data);
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
