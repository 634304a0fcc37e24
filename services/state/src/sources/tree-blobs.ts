import type { Queryable } from "@orch/kit";
import { unknownBlobMessage, unknownBlobRefs } from "../blobs/referenced.js";
import { sortTreeErrors } from "./tree-errors.js";
import type { Tree } from "./tree-types.js";

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
