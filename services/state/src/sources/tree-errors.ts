import type { OrchError } from "@orch/kit";
import type { SourceFileErrorRow } from "../db/sources.js";
import type { Tree } from "./tree-types.js";

/** A refusal of the upload API's checks as the error of a tree's file, at its line when it has one. */
export function fileError(file: string, err: OrchError): SourceFileErrorRow {
  const { line, column } = err.details;
  return {
    file,
    line: typeof line === "number" ? line : 0,
    column: typeof column === "number" ? column : 0,
    code: err.reason,
    message: err.message,
  };
}

/** Puts the tree's errors back in file, line, column order after a check appended some. */
export function sortTreeErrors(tree: Tree): void {
  tree.errors.sort(
    (a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0) || a.line - b.line || a.column - b.column,
  );
}
