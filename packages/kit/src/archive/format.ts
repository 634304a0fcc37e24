import { open } from "node:fs/promises";
import type { ArchiveFormat } from "./types.js";

/** Bytes detectArchiveFormat needs: the tar magic ends at offset 262. */
export const HEAD_BYTES = 512;

const startsWith = (head: Uint8Array, bytes: readonly number[], at = 0) =>
  head.length >= at + bytes.length && bytes.every((b, i) => head[at + i] === b);

const GZIP = [0x1f, 0x8b];
const ZIP_LOCAL = [0x50, 0x4b, 0x03, 0x04];
/** An empty zip is only its end-of-central-directory record. */
const ZIP_EMPTY = [0x50, 0x4b, 0x05, 0x06];
/** "ustar" at offset 257: POSIX ustar and GNU tar headers both have it. */
const USTAR = [0x75, 0x73, 0x74, 0x61, 0x72];

/** The format by its magic bytes (the file's first HEAD_BYTES bytes), or undefined. */
export function detectArchiveFormat(head: Uint8Array): ArchiveFormat | undefined {
  if (startsWith(head, GZIP)) return "tar.gz";
  if (startsWith(head, ZIP_LOCAL) || startsWith(head, ZIP_EMPTY)) return "zip";
  if (startsWith(head, USTAR, 257)) return "tar";
  return undefined;
}

/** The first HEAD_BYTES bytes of a file (fewer when it is shorter) and its size. */
export async function readHead(file: string): Promise<{ head: Uint8Array; size: number }> {
  const fh = await open(file, "r");
  try {
    const size = (await fh.stat()).size;
    const buf = Buffer.alloc(HEAD_BYTES);
    const { bytesRead } = await fh.read(buf, 0, HEAD_BYTES, 0);
    return { head: buf.subarray(0, bytesRead), size };
  } finally {
    await fh.close();
  }
}
