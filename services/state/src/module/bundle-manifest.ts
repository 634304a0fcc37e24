import {
  BLOB_DIGEST,
  BUNDLE_MAX_FILES,
  BUNDLE_REF_RULE,
  isBundleRef,
  sortBundleFiles,
  type BundleFile,
} from "@orch/contracts";
import { invalid, OrchError } from "@orch/kit";
import type { BlobRef } from "./types.js";

/**
 * The file manifest an upload carries (the gateway read it from the bundle and stored each file
 * as a blob), checked as any other input: sorted, or null for a module uploaded as YAML.
 */
export function bundleFiles(msgs: readonly { path: string; digest: string; size: bigint }[]): BundleFile[] | null {
  if (msgs.length === 0) return null;
  if (msgs.length > BUNDLE_MAX_FILES)
    throw new OrchError(
      "INVALID_ARGUMENT",
      "bundle_too_large",
      `a bundle holds at most ${BUNDLE_MAX_FILES} files (this one: ${msgs.length})`,
      { field: "files", limit: "files" },
    );
  const seen = new Set<string>();
  const files = msgs.map((m, i) => {
    const field = `files[${i}]`;
    if (!isBundleRef(m.path)) throw invalid("invalid_bundle", `${field}.path must be ${BUNDLE_REF_RULE}`, { field });
    if (seen.has(m.path)) throw invalid("unsafe_bundle_path", `${m.path} appears twice`, { field, entry: m.path });
    seen.add(m.path);
    if (!BLOB_DIGEST.test(m.digest)) throw invalid("invalid_digest", `${field}.digest is not a blob digest`, { field });
    if (m.size < 0n) throw invalid("invalid_bundle", `${field}.size must not be negative`, { field });
    return { path: m.path, digest: m.digest, size: Number(m.size) };
  });
  return sortBundleFiles(files);
}

/** A manifest entry as a blob reference, so an unstored one is refused like any other source. */
export const asRef = (f: BundleFile): BlobRef => ({ digest: f.digest, path: f.path, line: 0, column: 0 });
