import { createHash } from "node:crypto";
import { createReadStream } from "node:fs";
import { open } from "node:fs/promises";

/** `sha256:<hex>` of a file, read as a stream: a blob may be far larger than memory. */
export async function sha256OfFile(path: string): Promise<string> {
  const hash = createHash("sha256");
  for await (const piece of createReadStream(path)) hash.update(piece as Buffer);
  return `sha256:${hash.digest("hex")}`;
}

/** Flushes a file or directory to disk (a directory's sync makes a rename in it durable). */
export async function fsyncPath(path: string): Promise<void> {
  const fh = await open(path, "r");
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}
