import type { MessageInitShape } from "@bufbuild/protobuf";
import type { SourceFileErrorSchema, SourcePlanAssignmentSchema, SourcePlanSchema } from "@orch/contracts";
import { notFound, type Actor } from "@orch/kit";
import { operationMsg, runMsg } from "../convert.js";
import { sourceCatalogDb, type AssignmentRow } from "../db/catalog.js";
import { operationsDb } from "../db/operations.js";
import { runsDb } from "../db/runs.js";
import { sourcesDb, type SourceFileErrorRow } from "../db/sources.js";
import { approvedAgents, matchAgents } from "../engine/fanout.js";
import type { Engine } from "../engine/index.js";
import { loadSources } from "../engine/modules.js";
import type { ModuleSource } from "../engine/render.js";
import { definitionOf, diffTree, referencedModules, touched } from "./diff.js";
import { outsideParameterErrors } from "./outside-parameters.js";
import { gitFailureError, readSourceTree } from "./read.js";
import type { SourceBox } from "./seal.js";

type Plan = MessageInitShape<typeof SourcePlanSchema>;
type PlanAssignment = MessageInitShape<typeof SourcePlanAssignmentSchema>;

const errorMsg = (e: SourceFileErrorRow): MessageInitShape<typeof SourceFileErrorSchema> => ({ ...e });

/**
 * What syncing `ref` would do, without doing it: the tree is fetched and validated like a sync's,
 * compared with the catalog, and every assignment it creates or changes is planned on its agents
 * with the tree's module versions (runs record the source and commit). The catalog is not written.
 */
export async function planSource(
  engine: Engine,
  box: SourceBox | undefined,
  name: string,
  ref: string,
  waitMs: number,
  actor: Actor,
): Promise<Plan> {
  const { deps, clients, fanout, cache } = engine;
  const { pool, clock } = deps;
  const row = await sourcesDb.get(pool, name);
  if (!row) throw notFound("source_not_found", `no git source '${name}'`);
  const { commit, tree } = await readSourceTree(deps, box, row, ref).catch((err: unknown) => {
    throw gitFailureError(err);
  });
  const base = { source: name, ref, commit, currentCommit: row.commit };
  if (tree.errors.length) return { ...base, errors: tree.errors.map(errorMsg), complete: true };

  const names = [...tree.modules.map((m) => m.name), ...referencedModules(tree)];
  const diff = diffTree(
    name,
    tree,
    await sourceCatalogDb.modules(pool, name, names, false),
    await sourceCatalogDb.assignments(
      pool,
      name,
      tree.assignments.map((a) => a.name),
      false,
    ),
  );
  const refused = [...diff.errors, ...(await outsideParameterErrors(pool, cache, name, tree, diff))];
  if (refused.length) return { ...base, errors: refused.map(errorMsg), complete: true };

  const treeSources = new Map<string, ModuleSource>(
    tree.modules.map((m) => [m.name, { name: m.name, sha256: m.sha256, parsed: m.parsed }]),
  );
  const planned = touched(diff);
  const agents = planned.length ? await approvedAgents(clients, actor) : [];
  const runs = new Map<string, string>();
  for (const { assignment: t } of planned) {
    const def = definitionOf(t);
    const assignment: AssignmentRow = {
      name: t.name,
      ...def,
      created_at: clock.now(),
      created_by: actor.id,
      source: name,
      source_commit: commit,
    };
    const outside = await loadSources(
      pool,
      cache,
      def.modules.filter((m) => !treeSources.has(m)),
    );
    const byName = new Map([...treeSources, ...outside.map((s) => [s.name, s] as const)]);
    const { run } = await fanout.start({
      assignment,
      kind: "plan",
      batch: "",
      maxFailures: null,
      actor,
      sources: def.modules.map((m) => ({ ...byName.get(m)!, parameters: def.parameters })),
      agents: matchAgents(def.selector, agents),
      origin: { source: name, commit },
    });
    runs.set(t.name, run.id);
  }

  const deadline = clock.now() + waitMs;
  for (const id of runs.values()) await fanout.waitFor(id, deadline - clock.now());

  let complete = true;
  const change = new Map(planned.map((p) => [p.assignment.name, p.change]));
  const out: PlanAssignment[] = [];
  for (const t of tree.assignments) {
    const id = runs.get(t.name);
    const run = id ? await runsDb.get(pool, id) : undefined;
    if (!id || !run) {
      out.push({ name: t.name, change: change.get(t.name) ?? "unchanged" });
      continue;
    }
    if (run.status === "running") complete = false;
    const ops = (await operationsDb.page(pool, { run_id: id }, run.targets.length + 1, "", true)).sort((a, b) =>
      a.node_name < b.node_name ? -1 : a.node_name > b.node_name ? 1 : a.node_id < b.node_id ? -1 : 1,
    );
    out.push({
      name: t.name,
      change: change.get(t.name)!,
      run: runMsg(run, ops),
      operations: ops.map((o) => operationMsg(o, true)),
    });
  }
  for (const a of diff.assignments.removed) out.push({ name: a.name, change: "removed" });
  out.sort((a, b) => (a.name! < b.name! ? -1 : 1));

  return {
    ...base,
    errors: [],
    modulesChanged: [...diff.contentChanged].sort(),
    modulesRemoved: diff.modules.removed.filter((m) => !m.removed_from_source).map((m) => m.name),
    assignments: out,
    complete,
  };
}
