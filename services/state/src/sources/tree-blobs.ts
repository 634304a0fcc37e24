import { OrchError, type Queryable } from "@orch/kit";
import { inlineTemplateFiles } from "../module/template-files.js";
import { unknownBlobMessage, unknownBlobRefs } from "../blobs/referenced.js";
import type { SourceFileErrorRow } from "../db/sources.js";
import { asRef } from "../module/bundle-manifest.js";
import { fileError, sortTreeErrors } from "./tree-errors.js";
import type { Tree, TreeModule } from "./tree-types.js";

/**
 * A module file whose `source:` names a blob that is not stored is refused as the upload API
 * refuses it (unknown_blob at the line): a sync is all or nothing, so the source keeps its last
 * good commit until the blob is uploaded.
 */
export async function checkTreeBlobs(db: Queryable, tree: Tree): Promise<void> {
  let added = false;
  for (const m of tree.modules) {
    for (const ref of await unknownBlobRefs(db, m.parsed)) {
      tree.errors.push({
        file: m.file,
        line: ref.line,
        column: ref.column,
        code: "unknown_blob",
        message: unknownBlobMessage(ref),
      });
      added = true;
    }
  }
  if (added) sortTreeErrors(tree);
}

/**
 * Inside the apply's transaction: locks the blobs the modules about to be written name (their
 * sources and bundle files) against deletion, and returns unknown_blob for any deleted since the
 * tree was read (by an admin or the collector), so the sync fails as if it had not been stored.
 */
export async function lockTreeBlobs(db: Queryable, modules: readonly TreeModule[]): Promise<SourceFileErrorRow[]> {
  const errors: SourceFileErrorRow[] = [];
  for (const m of modules) {
    const blobs = [...m.parsed.blobs, ...(m.files ?? []).map(asRef)];
    const seen = new Set<string>();
    for (const ref of await unknownBlobRefs(db, { blobs }, { lock: true })) {
      if (seen.has(ref.digest)) continue;
      seen.add(ref.digest);
      errors.push({
        file: m.file,
        line: ref.line,
        column: ref.column,
        code: "unknown_blob",
        message: unknownBlobMessage(ref),
      });
    }
  }
  return errors;
}

/**
 * `template: true` sources are read and checked as an upload checks them: an error is the file's,
 * at the source's line, and the sync keeps its last good commit.
 */
export async function checkTreeTemplateFiles(db: Queryable, tree: Tree): Promise<void> {
  let added = false;
  for (const m of tree.modules) {
    try {
      await inlineTemplateFiles(db, m.parsed);
    } catch (err) {
      if (!(err instanceof OrchError)) throw err;
      tree.errors.push(fileError(m.file, err));
      added = true;
    }
  }
  if (added) sortTreeErrors(tree);
}
