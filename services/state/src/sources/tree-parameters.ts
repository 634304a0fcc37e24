import { parameterTemplateProblem } from "../module/liquid/context.js";
import { checkParameters, type DeclaringModule } from "../module/parameters.js";
import { sortTreeErrors } from "./tree-errors.js";
import type { Tree } from "./tree-types.js";

/**
 * Checks each assignment file's `parameters:` against the declarations of its modules, the tree's
 * own or (`outside`) the catalog's, with the API's check: a file is refused exactly when the same
 * CreateAssignment would be, at the line of the parameter (a missing one at `parameters:`, or the
 * file as a whole when it has none). An assignment using a module whose file is broken is not
 * checked: that file's error says why already.
 */
export function checkTreeParameters(tree: Tree, outside: ReadonlyMap<string, DeclaringModule>): void {
  const inTree = new Map(tree.modules.map((m) => [m.name, { name: m.name, parameters: m.parsed.parameters }]));
  let added = false;
  for (const a of tree.assignments) {
    const modules = a.modules.map((m) => inTree.get(m) ?? outside.get(m));
    if (modules.some((m) => m === undefined)) continue;
    const lines = a.parameterLines ?? {};
    for (const p of checkParameters(modules as DeclaringModule[], a.parameters, parameterTemplateProblem)) {
      const at = (p.parameter !== undefined ? lines[p.parameter] : undefined) ?? lines[""] ?? { line: 0, column: 0 };
      tree.errors.push({ file: a.file, ...at, code: p.code, message: p.message });
      added = true;
    }
  }
  if (added) sortTreeErrors(tree);
}

/** Names of modules the tree's assignments use that the tree does not hold (their declarations are read from the catalog). */
export function outsideModules(tree: Tree): string[] {
  const inTree = new Set(tree.modules.map((m) => m.name));
  return [...new Set(tree.assignments.flatMap((a) => a.modules))].filter((m) => !inTree.has(m));
}
