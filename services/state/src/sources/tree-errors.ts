import type { Tree } from "./tree-types.js";

/** Puts the tree's errors back in file, line, column order after a check appended some. */
export function sortTreeErrors(tree: Tree): void {
  tree.errors.sort(
    (a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0) || a.line - b.line || a.column - b.column,
  );
}
