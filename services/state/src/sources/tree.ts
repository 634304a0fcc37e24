import { createHash } from "node:crypto";
import {
  type ErrorReason,
  SOURCE_ASSIGNMENTS_DIR,
  SOURCE_FILE_RE,
  SOURCE_MAX_FILES,
  SOURCE_MODULES_DIR,
  SOURCE_VALUES_DIR,
} from "@orch/contracts";
import { OrchError } from "@orch/kit";
import type { SourceFileErrorRow } from "../db/sources.js";
import { MODULE_MAX_BYTES, parseModule } from "../module/parse.js";
import { validName } from "../validate.js";
import { readAssignmentFile } from "./assignment-file.js";
import type { TreeFile } from "./git.js";
import type { Tree, TreeModule } from "./tree-types.js";
import { readValueFile } from "../values/source-file.js";

/**
 * A commit's modules/ and assignments/ validated as a whole, before anything is applied: a sync is
 * all or nothing, so every file's problems are collected rather than stopping at the first.
 * Errors without a position (the file as a whole) carry line 0, column 0.
 */

type Kind = "module" | "assignment" | "value set";

interface Entry {
  file: TreeFile;
  kind: Kind;
  name: string;
}

/** Validates every file; `known`: module names that exist outside the tree (the catalog), so references resolve. */
export function parseTree(files: TreeFile[], known: ReadonlySet<string>): Tree {
  const tree: Tree = { modules: [], assignments: [], values: [], errors: [] };
  if (files.length > SOURCE_MAX_FILES) {
    const message = `more than ${SOURCE_MAX_FILES} files under ${SOURCE_MODULES_DIR}/ and ${SOURCE_ASSIGNMENTS_DIR}/`;
    tree.errors.push(treeError("", "invalid_source", message));
    return tree;
  }
  const entries = classify(files, tree.errors);
  // Every module file names a module, valid or not: an assignment using a broken one is reported
  // once, on the module's file, not again as module_not_found.
  const inTree = new Set(entries.filter((e) => e.kind === "module").map((e) => e.name));
  const resolves = (m: string) => inTree.has(m) || known.has(m);

  for (const { file, kind, name } of entries) {
    if (file.bytes > MODULE_MAX_BYTES) {
      // The upload API's code for the same content.
      const code = kind === "module" ? "module_too_large" : "invalid_source";
      tree.errors.push(
        treeError(file.path, code, `the file is ${file.bytes} bytes, more than ${MODULE_MAX_BYTES} (256 KiB)`),
      );
      continue;
    }
    if (kind === "module") {
      const m = readModuleFile(file, name, tree.errors);
      if (m) tree.modules.push(m);
    } else if (kind === "value set") {
      const v = readValueFile(file.path, name, file.content);
      tree.errors.push(...v.errors);
      if (v.set) tree.values!.push(v.set);
    } else {
      const r = readAssignmentFile(file.path, name, file.content, resolves);
      tree.errors.push(...r.errors);
      if (r.assignment) tree.assignments.push(r.assignment);
    }
  }
  tree.errors.sort(
    (a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0) || a.line - b.line || a.column - b.column,
  );
  return tree;
}

/** Which files are modules or assignments, with valid and unique names; the rest become errors. */
function classify(files: readonly TreeFile[], errors: SourceFileErrorRow[]): Entry[] {
  const out: Entry[] = [];
  const seen = new Map<string, string>();
  const sorted = [...files].sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (const file of sorted) {
    const slash = file.path.indexOf("/");
    const dir = file.path.slice(0, slash);
    const base = file.path.slice(slash + 1);
    const kind: Kind | undefined =
      dir === SOURCE_MODULES_DIR
        ? "module"
        : dir === SOURCE_ASSIGNMENTS_DIR
          ? "assignment"
          : dir === SOURCE_VALUES_DIR
            ? "value set"
            : undefined;
    // readTree lists only these; anything else is not part of the tree's contract.
    if (slash < 0 || !kind || !SOURCE_FILE_RE.test(base)) continue;
    const name = base.replace(/\.ya?ml$/, "");
    try {
      validName(name, "file name", kind);
    } catch (err) {
      if (!(err instanceof OrchError)) throw err;
      errors.push(treeError(file.path, err.reason, err.message));
      continue;
    }
    const first = seen.get(`${kind}:${name}`);
    if (first) {
      errors.push(treeError(file.path, "invalid_source", `${kind} '${name}' is already defined by ${first}`));
      continue;
    }
    seen.set(`${kind}:${name}`, file.path);
    out.push({ file, kind, name });
  }
  return out;
}

function readModuleFile(file: TreeFile, name: string, errors: SourceFileErrorRow[]): TreeModule | undefined {
  try {
    // The upload API's parser: a file is refused with the same reason, message and position.
    const parsed = parseModule(file.content, name);
    const sha256 = createHash("sha256").update(file.content).digest("hex");
    return { file: file.path, name, content: file.content, sha256, parsed };
  } catch (err) {
    if (!(err instanceof OrchError)) throw err;
    const { line, column } = err.details;
    errors.push({
      file: file.path,
      line: typeof line === "number" ? line : 0,
      column: typeof column === "number" ? column : 0,
      code: err.reason,
      message: err.message,
    });
    return undefined;
  }
}

const treeError = (file: string, code: ErrorReason, message: string): SourceFileErrorRow => ({
  file,
  line: 0,
  column: 0,
  code,
  message,
});
