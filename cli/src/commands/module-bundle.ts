/** orchctl modules push <dir | archive>: a module bundle (docs/modules.md, "Bundles"). */
import { createReadStream, existsSync } from "node:fs";
import { readFile, stat } from "node:fs/promises";
import { basename, join } from "node:path";
import { Readable } from "node:stream";
import { create } from "tar";
import { BUNDLE_FILES_DIR, BUNDLE_MODULE_FILE } from "@orch/contracts";
import type { Context } from "../context.js";
import { CliError } from "../errors.js";
import { putStream } from "./blob-upload.js";
import { isHeld, type HeldWrite } from "./catalog-held.js";

/** A bundle uploaded: the module as the API answers it, with its files. */
export interface BundleUpload {
  name: string;
  sha256: string;
  resource_count: number;
  files: { path: string; digest: string; size: number }[];
}

const ARCHIVE = /\.(tar\.gz|tgz|tar|zip)$/;

export const isArchiveFile = (path: string) => ARCHIVE.test(path);

/** The module name a directory's module.yaml gives, else the directory's name. */
async function dirModuleName(dir: string, nameOf: (content: string, file: string) => string): Promise<string> {
  const yaml = join(dir, BUNDLE_MODULE_FILE);
  let content: string;
  try {
    content = await readFile(yaml, "utf8");
  } catch (err) {
    throw new CliError(
      `${dir} is a directory without ${BUNDLE_MODULE_FILE} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): a bundle is a directory with ${BUNDLE_MODULE_FILE} and ${BUNDLE_FILES_DIR}/`,
      "file_unreadable",
    );
  }
  return nameOf(content, basename(dir));
}

/**
 * Packs the directory (module.yaml and files/, nothing else) as a tar.gz while it is sent, or sends
 * an archive file as it is. Either way nothing is held whole in memory.
 */
export async function pushBundle(
  ctx: Context,
  path: string,
  name: string | undefined,
  nameOf: (content: string, file: string) => string,
  approval: { reason?: string; break_glass?: boolean } = {},
): Promise<BundleUpload | (HeldWrite & { name: string })> {
  const st = await stat(path).catch((err: NodeJS.ErrnoException) => {
    throw new CliError(`cannot read ${path}: ${err.code ?? err.message}`, "file_unreadable");
  });
  let body: Readable;
  let size: number | undefined;
  if (st.isDirectory()) {
    name ??= await dirModuleName(path, nameOf);
    const entries = [BUNDLE_MODULE_FILE, ...(existsSync(join(path, BUNDLE_FILES_DIR)) ? [BUNDLE_FILES_DIR] : [])];
    // portable: no owner names or uids, so the archive (and its blobs) depend on content only.
    body = Readable.from(create({ gzip: true, cwd: path, portable: true }, entries));
  } else {
    name ??= basename(path).replace(ARCHIVE, "");
    body = createReadStream(path);
    size = st.size;
  }
  // The approval fields ride in the query: the body is the archive (docs/approvals.md, catalog.write).
  const query = new URLSearchParams();
  if (approval.reason !== undefined) query.set("reason", approval.reason);
  if (approval.break_glass) query.set("break_glass", "true");
  const path_ = `/api/v1/modules/${encodeURIComponent(name)}/bundle${query.size ? `?${query}` : ""}`;
  const res = (await putStream<BundleUpload | HeldWrite>(ctx, path_, body, size)).body;
  return isHeld(res) ? { ...res, name } : res;
}
