import { createHash } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join, posix } from "node:path";
import type { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import {
  BUNDLE_FILES_DIR,
  BUNDLE_MAX_ARCHIVE_BYTES,
  BUNDLE_MAX_FILES,
  BUNDLE_MODULE_FILE,
  MODULE_MAX_BYTES,
  type BundleFile,
  type StateService,
} from "@orch/contracts";
import { invalid, OrchError, type CallOptions, type Client } from "@orch/kit";
import { ArchiveError, readArchive, type ArchiveEntry } from "@orch/kit/archive";
import { uploadBlob } from "./blob-upload.js";

/**
 * A module bundle (docs/modules.md, "Bundles"): a tar, tar.gz or zip holding module.yaml and
 * files/, at its root or under one top-level directory. The body is spooled to a private temp
 * directory (a zip's index is at its end, and the archive is read once, entry by entry); each file
 * under files/ is spooled and hashed, then stored as a blob exactly as `PUT /blobs` would. The
 * module is uploaded last, with the manifest: a bundle refused part-way stores no module. Blobs it
 * stored before the refusal are content-addressed and harmless (another upload may reuse them).
 */

export interface BundleModule {
  content: string;
  files: BundleFile[];
}

/** Reads the bundle in `body` and stores its files as blobs; the caller uploads the module. */
export async function readBundle(
  state: Client<typeof StateService>,
  body: Readable,
  declaredSize: number,
  opts: { timeoutMs: number; call: CallOptions },
): Promise<BundleModule> {
  if (declaredSize > BUNDLE_MAX_ARCHIVE_BYTES) throw tooLarge(`the bundle is ${declaredSize} bytes`, "archive");
  const dir = await mkdtemp(join(tmpdir(), "orch-bundle-"));
  try {
    const archive = join(dir, "bundle");
    await spool(body, archive, BUNDLE_MAX_ARCHIVE_BYTES);
    return await readEntries(state, archive, dir, opts);
  } catch (e) {
    throw e instanceof ArchiveError ? fromArchiveError(e) : e;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

async function readEntries(
  state: Client<typeof StateService>,
  archive: string,
  dir: string,
  opts: { timeoutMs: number; call: CallOptions },
): Promise<BundleModule> {
  let root: string | undefined;
  let content: string | undefined;
  const files = new Map<string, BundleFile>();
  const links = new Map<string, string>();
  const spoolFile = join(dir, "entry");
  for await (const entry of readArchive(archive)) {
    root ??= rootOf(entry);
    if (root && entry.path !== root.slice(0, -1) && !entry.path.startsWith(root))
      throw invalid(
        "invalid_bundle",
        `${entry.path} is outside the bundle's top-level directory ${root}: a bundle is one module`,
        { entry: entry.path },
      );
    const rel = entry.path.slice(root.length);
    if (rel === BUNDLE_MODULE_FILE && entry.kind === "file") content = await readModuleYaml(entry);
    else if (!rel.startsWith(`${BUNDLE_FILES_DIR}/`))
      continue; // a README or the like: not shipped
    else if (entry.kind === "symlink") links.set(rel, resolveLink(rel, entry.target));
    else if (entry.kind === "file") {
      if (files.size >= BUNDLE_MAX_FILES) throw tooLarge(`more than ${BUNDLE_MAX_FILES} files under files/`, "files");
      const { digest, size } = await spoolHashed(entry, spoolFile);
      await uploadBlob(
        state,
        { digest, declaredSize: size, body: createReadStream(spoolFile), timeoutMs: opts.timeoutMs },
        opts.call,
      );
      files.set(rel, { path: rel, digest, size });
    }
  }
  if (content === undefined)
    throw invalid(
      "invalid_bundle",
      `the bundle has no ${BUNDLE_MODULE_FILE} at its root (or under one top-level directory)`,
      {},
    );
  // A link inside files/ ships the file it names (links to links are followed, a few deep).
  for (const [path, target] of links) {
    const file = followLinks(target, files, links);
    if (!file)
      throw invalid("invalid_bundle", `${path} links to ${target}, which is not a file of the bundle`, { entry: path });
    files.set(path, { path, digest: file.digest, size: file.size });
  }
  return { content, files: [...files.values()] };
}

/** The bundle's top-level directory ("" or "<dir>/"), decided by its first entry. */
function rootOf(entry: ArchiveEntry): string {
  const [top, ...rest] = entry.path.split("/");
  if (top === BUNDLE_MODULE_FILE || top === BUNDLE_FILES_DIR) return "";
  return entry.kind === "directory" || rest.length > 0 ? `${top}/` : "";
}

/** A link's target as a bundle path (the reader has checked it stays inside the archive's tree). */
function resolveLink(path: string, target: string): string {
  return posix.normalize(posix.join(posix.dirname(path), target));
}

function followLinks(
  target: string,
  files: ReadonlyMap<string, BundleFile>,
  links: ReadonlyMap<string, string>,
): BundleFile | undefined {
  let at = target;
  for (let hops = 0; hops < 8; hops++) {
    const file = files.get(at);
    if (file) return file;
    const next = links.get(at);
    if (next === undefined) return undefined;
    at = next;
  }
  return undefined;
}

async function readModuleYaml(entry: Extract<ArchiveEntry, { kind: "file" }>): Promise<string> {
  if (entry.size > MODULE_MAX_BYTES)
    throw invalid("module_too_large", `${BUNDLE_MODULE_FILE} is ${entry.size} bytes, more than 256 KiB`, {
      field: "content",
    });
  const parts: Uint8Array[] = [];
  for await (const part of entry.stream()) parts.push(part);
  return Buffer.concat(parts).toString("utf8");
}

/** Writes the entry to `file`, hashing it on the way: its digest must be known before the blob upload starts. */
async function spoolHashed(
  entry: Extract<ArchiveEntry, { kind: "file" }>,
  file: string,
): Promise<{ digest: string; size: number }> {
  const hash = createHash("sha256");
  let size = 0;
  await pipeline(
    entry.stream(),
    async function* (source: AsyncIterable<Uint8Array>) {
      for await (const part of source) {
        hash.update(part);
        size += part.length;
        yield part;
      }
    },
    createWriteStream(file),
  );
  return { digest: `sha256:${hash.digest("hex")}`, size };
}

/** The request body into `file`, refused (413) past `max` bytes without reading further. */
async function spool(body: Readable, file: string, max: number): Promise<void> {
  let size = 0;
  await pipeline(
    body,
    async function* (source: AsyncIterable<Buffer>) {
      for await (const part of source) {
        size += part.length;
        if (size > max) throw tooLarge(`the bundle is larger than ${max} bytes`, "archive");
        yield part;
      }
    },
    createWriteStream(file),
  );
}

const tooLarge = (message: string, limit: string) =>
  new OrchError("INVALID_ARGUMENT", "bundle_too_large", message, { limit });

function fromArchiveError(e: ArchiveError): OrchError {
  const entry = e.entry === undefined ? {} : { entry: e.entry };
  switch (e.code) {
    case "unsafe_path":
    case "unsafe_link":
      return invalid("unsafe_bundle_path", `unsafe bundle: ${e.message}`, entry);
    case "too_many_entries":
    case "too_large":
    case "ratio":
      return tooLarge(
        e.code === "ratio"
          ? `the bundle expands more than 100 times its size, refused as a zip bomb: ${e.message}`
          : e.message,
        e.code === "ratio" ? "ratio" : e.code === "too_large" ? "expanded" : "entries",
      );
    default:
      return invalid("invalid_bundle", `not a module bundle (tar, tar.gz or zip): ${e.message}`, entry);
  }
}
