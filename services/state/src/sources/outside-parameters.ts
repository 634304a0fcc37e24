import type { Queryable } from "@orch/kit";
import { assignmentsDb, modulesDb } from "../db/catalog.js";
import type { SourceFileErrorRow } from "../db/sources.js";
import type { ModuleCache } from "../engine/modules.js";
import { checkParameters, type DeclaringModule } from "../module/parameters.js";
import type { TreeDiff } from "./diff.js";
import type { Tree } from "./tree-types.js";

/**
 * Assignments the source does not manage (made through the API, or by another source) that use a
 * module the tree changes: the new version must leave their parameters valid, as an upload must
 * (module_breaks_assignments), or the sync is refused with an error on the module's file. The
 * tree's own assignments were checked against the tree already (tree-parameters.ts).
 */
export async function outsideParameterErrors(
  db: Queryable,
  cache: ModuleCache,
  source: string,
  tree: Tree,
  diff: TreeDiff,
): Promise<SourceFileErrorRow[]> {
  const changed = new Map(diff.modules.updated.map((m) => [m.name, m]));
  if (changed.size === 0) return [];
  const users = (await assignmentsDb.usingAny(db, [...changed.keys()])).filter((a) => a.source !== source);
  if (users.length === 0) return [];
  const inTree = new Map(tree.modules.map((m) => [m.name, m.parsed.parameters]));
  const others = [...new Set(users.flatMap((a) => a.modules))].filter((m) => !inTree.has(m));
  const catalog = new Map(
    (others.length ? await modulesDb.getMany(db, others) : []).map((r) => [
      r.name,
      cache.parse(r.name, r.sha256, r.content, r.files).parameters,
    ]),
  );
  const errors: SourceFileErrorRow[] = [];
  for (const a of users) {
    const modules: DeclaringModule[] = a.modules.flatMap((m) => {
      const parameters = inTree.get(m) ?? catalog.get(m);
      return parameters ? [{ name: m, parameters }] : [];
    });
    const problem = checkParameters(modules, a.parameters)[0];
    if (!problem) continue;
    const module = changed.get(a.modules.find((m) => changed.has(m))!)!;
    errors.push({
      file: module.file,
      line: 0,
      column: 0,
      code: "module_breaks_assignments",
      message: `module '${module.name}' would make the parameters of assignment '${a.name}' invalid (${problem.message}); change the assignment first`,
    });
  }
  return errors;
}
