import { isDeepStrictEqual } from "node:util";
import type { AssignmentRow, ModuleRow } from "../db/catalog.js";
import type { SourceFileErrorRow } from "../db/sources.js";
import type { Tree, TreeAssignment, TreeModule } from "./tree-types.js";

/** An assignment's stored definition as the tree states it (what the API's checks would store). */
export interface TreeDefinition {
  selector: string;
  modules: string[];
  description: string | null;
  enforce: boolean;
  apply_on_sync: boolean;
  sync_batch: string;
  sync_max_failures: number | null;
  parameters: Record<string, unknown>;
}

export const definitionOf = (t: TreeAssignment): TreeDefinition => ({
  selector: t.selector.trim(),
  modules: [...new Set(t.modules)],
  description: t.description,
  enforce: t.enforce,
  apply_on_sync: t.apply_on_sync,
  sync_batch: t.batch,
  sync_max_failures: t.max_failures,
  parameters: t.parameters ?? {},
});

function sameDefinition(old: AssignmentRow, d: TreeDefinition): boolean {
  return (
    old.selector === d.selector &&
    old.modules.length === d.modules.length &&
    old.modules.every((m, i) => m === d.modules[i]) &&
    old.description === d.description &&
    old.enforce === d.enforce &&
    old.apply_on_sync === d.apply_on_sync &&
    old.sync_batch === d.sync_batch &&
    old.sync_max_failures === d.sync_max_failures &&
    isDeepStrictEqual(old.parameters, d.parameters)
  );
}

/** A valid tree against the catalog: what a sync would write, and what it may not take over. */
export interface TreeDiff {
  modules: {
    created: TreeModule[];
    /** Content differs from the catalog's. */
    updated: TreeModule[];
    /** Same content, back in the tree after its file had been removed. */
    restored: TreeModule[];
    unchanged: TreeModule[];
    /** Managed by the source, no longer in the tree (removed_from_source ones included). */
    removed: ModuleRow[];
  };
  assignments: {
    created: TreeAssignment[];
    /** The definition differs. */
    updated: Array<{ next: TreeAssignment; old: AssignmentRow }>;
    unchanged: TreeAssignment[];
    removed: AssignmentRow[];
  };
  /** Tree modules whose content the catalog does not hold yet (created or updated). */
  contentChanged: ReadonlySet<string>;
  /** Objects of the tree the source may not write; when any, nothing may be applied. */
  errors: SourceFileErrorRow[];
}

/**
 * Compares a parsed, valid tree with the catalog rows of its names and of everything `source`
 * manages. Objects owned elsewhere (uploaded through the API or by another source) are conflicts:
 * a sync never takes them over silently.
 */
export function diffTree(
  source: string,
  tree: Tree,
  modules: readonly ModuleRow[],
  assignments: readonly AssignmentRow[],
): TreeDiff {
  const errors: SourceFileErrorRow[] = [];
  const owner = (s: string | null) => (s === null ? "was created through the API" : `is managed by git source '${s}'`);
  const conflict = (file: string, what: string, name: string, s: string | null) =>
    errors.push({
      file,
      line: 1,
      column: 0,
      code: "managed_by_source",
      message: `${what} '${name}' ${owner(s)}: delete it there or rename the file`,
    });

  const modRows = new Map(modules.map((m) => [m.name, m]));
  const inTree = new Set(tree.modules.map((m) => m.name));
  const d: TreeDiff = {
    modules: { created: [], updated: [], restored: [], unchanged: [], removed: [] },
    assignments: { created: [], updated: [], unchanged: [], removed: [] },
    contentChanged: new Set(),
    errors,
  };
  const changed = new Set<string>();
  for (const m of tree.modules) {
    const old = modRows.get(m.name);
    if (!old) {
      d.modules.created.push(m);
      changed.add(m.name);
    } else if (old.source !== source) conflict(m.file, "module", m.name, old.source);
    else if (old.sha256 !== m.sha256) {
      d.modules.updated.push(m);
      changed.add(m.name);
    } else if (old.removed_from_source) d.modules.restored.push(m);
    else d.modules.unchanged.push(m);
  }
  for (const old of modules) if (old.source === source && !inTree.has(old.name)) d.modules.removed.push(old);
  d.contentChanged = changed;

  const asgRows = new Map(assignments.map((a) => [a.name, a]));
  const asgInTree = new Set(tree.assignments.map((a) => a.name));
  for (const t of tree.assignments) {
    // parseTree resolved the references against the catalog as it was; it may have changed since.
    for (const m of new Set(t.modules)) {
      const row = modRows.get(m);
      if (!inTree.has(m) && (!row || row.source === source))
        errors.push({ file: t.file, line: 0, column: 0, code: "module_not_found", message: `no module '${m}'` });
    }
    const old = asgRows.get(t.name);
    if (!old) d.assignments.created.push(t);
    else if (old.source !== source) conflict(t.file, "assignment", t.name, old.source);
    else if (!sameDefinition(old, definitionOf(t))) d.assignments.updated.push({ next: t, old });
    else d.assignments.unchanged.push(t);
  }
  for (const old of assignments) if (old.source === source && !asgInTree.has(old.name)) d.assignments.removed.push(old);

  errors.sort((a, b) => (a.file < b.file ? -1 : a.file > b.file ? 1 : a.line - b.line));
  return d;
}

/** Names of the modules a tree's assignments reference (for locking and loading them). */
export const referencedModules = (tree: Tree): string[] => [...new Set(tree.assignments.flatMap((a) => a.modules))];

/**
 * Tree assignments a change reaches: created, definition updated, or using a module whose content
 * changed. These are what apply_on_sync applies and what a plan plans.
 */
export function touched(d: TreeDiff): Array<{ assignment: TreeAssignment; change: "created" | "updated" }> {
  const out: Array<{ assignment: TreeAssignment; change: "created" | "updated" }> = [
    ...d.assignments.created.map((assignment) => ({ assignment, change: "created" as const })),
    ...d.assignments.updated.map((u) => ({ assignment: u.next, change: "updated" as const })),
    ...d.assignments.unchanged
      .filter((a) => a.modules.some((m) => d.contentChanged.has(m)))
      .map((assignment) => ({ assignment, change: "updated" as const })),
  ];
  return out.sort((a, b) => (a.assignment.name < b.assignment.name ? -1 : 1));
}
