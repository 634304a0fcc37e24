import {
  BUNDLE_MAX_FILES,
  BUNDLE_MODULE_FILE,
  type BundleFile,
  type ErrorReason,
  SOURCE_ASSIGNMENTS_DIR,
  SOURCE_FILE_RE,
  SOURCE_MAX_FILES,
  SOURCE_MODULES_DIR,
  SOURCE_POLICIES_DIR,
  SOURCE_VALUES_DIR,
} from "@orch/contracts";
import { OrchError } from "@orch/kit";
import type { SourceFileErrorRow } from "../db/sources.js";
import { MODULE_MAX_BYTES, parseModule } from "../module/parse.js";
import { validName } from "../validate.js";
import { readAssignmentFile } from "./assignment-file.js";
import type { TreeFile } from "./git.js";
import type { BundleDigests } from "./tree-bundles.js";
import { moduleSha256 } from "../module/version-hash.js";
import { fileError } from "./tree-errors.js";
import type { Tree, TreeModule } from "./tree-types.js";
import { readValueFile } from "../values/source-file.js";
import { readPolicyFile } from "./policy-file.js";

/**
 * A commit's modules/ and assignments/ validated as a whole, before anything is applied: a sync is
 * all or nothing, so every file's problems are collected rather than stopping at the first.
 * Errors without a position (the file as a whole) carry line 0, column 0.
 */

type Kind = "module" | "assignment" | "value set" | "approval policy";

interface Entry {
  file: TreeFile;
  kind: Kind;
  name: string;
}

/**
 * Validates every file; `known`: module names that exist outside the tree (the catalog), so
 * references resolve; `digests`: the stored blob of each bundle file's git object (tree-bundles.ts).
 */
export function parseTree(all: TreeFile[], known: ReadonlySet<string>, digests: BundleDigests = new Map()): Tree {
  const tree: Tree = { modules: [], assignments: [], values: [], policies: [], errors: [] };
  const files = all.filter((f) => !f.blob);
  const bundles = bundleFilesByModule(all, digests, tree.errors);
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
      const bundle = file.path.endsWith(`/${BUNDLE_MODULE_FILE}`);
      const m = readModuleFile(file, name, tree.errors, bundle ? (bundles.get(name) ?? []) : null);
      if (m) tree.modules.push(m);
      bundles.delete(name);
    } else if (kind === "value set") {
      const v = readValueFile(file.path, name, file.content);
      tree.errors.push(...v.errors);
      if (v.set) tree.values!.push(v.set);
    } else if (kind === "approval policy") {
      const p = readPolicyFile(file.path, name, file.content);
      tree.errors.push(...p.errors);
      if (p.policy) tree.policies!.push(p.policy);
    } else {
      const r = readAssignmentFile(file.path, name, file.content, resolves);
      tree.errors.push(...r.errors);
      if (r.assignment) tree.assignments.push(r.assignment);
    }
  }
  for (const name of bundles.keys())
    tree.errors.push(
      treeError(
        `${SOURCE_MODULES_DIR}/${name}/files`,
        "invalid_bundle",
        `files/ without ${SOURCE_MODULES_DIR}/${name}/${BUNDLE_MODULE_FILE}: a bundle is a directory with ${BUNDLE_MODULE_FILE} and files/`,
      ),
    );
  tree.errors.sort(
    (a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : 0) || a.line - b.line || a.column - b.column,
  );
  return tree;
}

/** modules/<name>/files/… grouped by module, as manifests (path files/…); links and unstored files are errors. */
function bundleFilesByModule(
  files: readonly TreeFile[],
  digests: BundleDigests,
  errors: SourceFileErrorRow[],
): Map<string, BundleFile[]> {
  const out = new Map<string, BundleFile[]>();
  const blobs = files.filter((f) => f.blob);
  if (blobs.length > BUNDLE_MAX_FILES) {
    errors.push(treeError("", "bundle_too_large", `more than ${BUNDLE_MAX_FILES} files under modules/*/files/`));
    return out;
  }
  for (const f of blobs) {
    const [, name, ...rest] = f.path.split("/");
    const list = out.get(name!) ?? [];
    out.set(name!, list);
    const known = digests.get(f.blob!.oid);
    if (f.blob!.link)
      errors.push(treeError(f.path, "invalid_bundle", "a symlink: a source ships files only (commit the file itself)"));
    else if (!known)
      errors.push(treeError(f.path, "blob_too_large", `the file is ${f.bytes} bytes, more than state.blob_max_bytes`));
    else list.push({ path: rest.join("/"), digest: known.digest, size: known.size });
  }
  return out;
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
            : dir === SOURCE_POLICIES_DIR
              ? "approval policy"
              : undefined;
    // modules/<name>/module.yaml: a bundle (its files/ come with it).
    const bundle = kind === "module" && base.endsWith(`/${BUNDLE_MODULE_FILE}`) && base.split("/").length === 2;
    // readTree lists only these; anything else is not part of the tree's contract.
    if (slash < 0 || !kind || (!bundle && !SOURCE_FILE_RE.test(base))) continue;
    const name = bundle ? base.slice(0, base.indexOf("/")) : base.replace(/\.ya?ml$/, "");
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

function readModuleFile(
  file: TreeFile,
  name: string,
  errors: SourceFileErrorRow[],
  bundle: BundleFile[] | null,
): TreeModule | undefined {
  const files = bundle?.length ? bundle : null;
  try {
    // The upload API's parser: a file is refused with the same reason, message and position.
    const parsed = parseModule(file.content, name, files);
    const sha256 = moduleSha256(file.content, files);
    return { file: file.path, name, content: file.content, sha256, parsed, files };
  } catch (err) {
    if (!(err instanceof OrchError)) throw err;
    errors.push(fileError(file.path, err));
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
