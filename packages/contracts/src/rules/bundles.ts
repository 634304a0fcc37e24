/**
 * Module bundles (docs/modules.md, "Bundles"): a directory with `module.yaml` and `files/`, uploaded
 * as a tar.gz or zip. A resource names a shipped file as `source: files/<path>`; the upload stores
 * each file as a blob and the module keeps the path → digest manifest. The gateway (reading the
 * archive), the state service (resolving sources), git sources and orchctl (packing a directory)
 * all read the layout through here.
 */
export const BUNDLE_MODULE_FILE = "module.yaml";
export const BUNDLE_FILES_DIR = "files";
/** A bundle holds at most this many files under files/ (each one a blob). */
export const BUNDLE_MAX_FILES = 10_000;
/** Largest bundle archive accepted, compressed: 1 GiB and a little room for headers. */
export const BUNDLE_MAX_ARCHIVE_BYTES = 1024 * 1024 * 1024 + 16 * 1024 * 1024;

/** One file of a bundle: its path under files/ (as a resource names it), content digest and size. */
export interface BundleFile {
  path: string;
  digest: string;
  size: number;
}

const SEGMENT = /^[^/\0]+$/;

/**
 * Whether a `source:` names a bundle file (`files/…`) rather than a blob digest. Only the shape is
 * checked; whether the bundle has it is the upload's question.
 */
export function isBundleRef(source: string): boolean {
  if (!source.startsWith(`${BUNDLE_FILES_DIR}/`)) return false;
  const segments = source.split("/").slice(1);
  return segments.length > 0 && segments.every((s) => SEGMENT.test(s) && s !== "." && s !== "..");
}

export const BUNDLE_REF_RULE = `a blob digest (sha256: and 64 lowercase hex digits) or a file of the module's bundle (${BUNDLE_FILES_DIR}/<path>, without '..')`;

/** The manifest in its canonical order (by path): what the module's version hash covers. */
export function sortBundleFiles(files: readonly BundleFile[]): BundleFile[] {
  return [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** A module's YAML (module.yaml, or the body of a YAML upload) is at most 256 KiB. */
export const MODULE_MAX_BYTES = 256 * 1024;
