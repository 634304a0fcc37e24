import type { Stats } from "node:fs";
import { lstat } from "node:fs/promises";

/** The entry itself (a link is not followed), or null when nothing is there. */
export async function lstatOrNull(p: string): Promise<Stats | null> {
  try {
    return await lstat(p);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw e;
  }
}
