import { createHash } from "node:crypto";
import { sortBundleFiles, type BundleFile } from "@orch/contracts";

/**
 * A module version's hash: of its YAML alone, as it always was, or for a bundle of the YAML and
 * its sorted file manifest, so that a bundle whose files change is a new version (snapshots, the
 * parse cache and drift all key on it) even when module.yaml is the same.
 */
export function moduleSha256(content: string, files: readonly BundleFile[] | null): string {
  const h = createHash("sha256").update(content);
  if (files?.length) {
    h.update("\0files\0");
    for (const f of sortBundleFiles(files)) h.update(`${f.path}\0${f.digest}\0${f.size}\n`);
  }
  return h.digest("hex");
}
