import { count } from "@orch/contracts";
import type { Actor, Emit, Queryable } from "@orch/kit";
import { assignmentsDb, modulesDb, sourceCatalogDb, type AssignmentRow, type ModuleRow } from "../db/catalog.js";
import { changedParameters, parametersNote } from "../engine/assignment-parameters.js";
import { definitionOf, type TreeDiff } from "./diff.js";
import type { TreeAssignment, TreeModule } from "./tree-types.js";

export interface ApplyInput {
  source: string;
  commit: string;
  now: number;
  /** The source's system actor (sourceActor). */
  actor: Actor;
  diff: TreeDiff;
}

export interface Applied {
  created: number;
  updated: number;
  /** Deleted objects, and modules newly marked removed_from_source. */
  removed: number;
  /** Modules whose file is gone but that an assignment still uses (kept, marked removed_from_source). */
  kept: string[];
}

export const short = (commit: string) => commit.slice(0, 7);

/** One apply's context, shared by its steps. */
interface Writing {
  db: Queryable;
  emit: Emit;
  a: ApplyInput;
  /** "source <name> @ <short commit>", the author in event summaries. */
  by: string;
  /** Added to every event's metadata. */
  origin: { source: string; commit: string };
  out: Applied;
}

/**
 * Writes a diff into the catalog inside the caller's transaction, with the same events the API
 * emits for the same changes (metadata gains `source` and `commit`). Order matters: modules
 * first (assignments reference them), removed assignments before removed modules (a module is
 * deleted only once nothing uses it).
 */
export async function applyDiff(db: Queryable, emit: Emit, a: ApplyInput): Promise<Applied> {
  const w: Writing = {
    db,
    emit,
    a,
    by: `${a.actor.name} @ ${short(a.commit)}`,
    origin: { source: a.source, commit: a.commit },
    out: { created: 0, updated: 0, removed: 0, kept: [] },
  };
  await writeModules(w);
  await writeAssignments(w);
  await removeAssignments(w);
  await removeModules(w);
  return w.out;
}

const moduleRow = ({ a }: Writing, m: TreeModule): ModuleRow => ({
  name: m.name,
  content: m.content,
  sha256: m.sha256,
  description: m.parsed.description,
  resource_count: m.parsed.resources.length,
  uploaded_at: a.now,
  uploaded_by: a.actor.id,
  uploaded_by_name: a.actor.name,
  source: a.source,
  source_commit: a.commit,
  removed_from_source: false,
  files: m.files,
});

async function writeModules(w: Writing): Promise<void> {
  const { db, emit, a, by, origin, out } = w;
  const { modules } = a.diff;
  for (const [m, replaced] of [
    ...modules.created.map((m) => [m, false] as const),
    ...modules.updated.map((m) => [m, true] as const),
  ]) {
    const row = moduleRow(w, m);
    await modulesDb.upsert(db, row);
    await emit({
      type: "module.uploaded",
      summary: `module ${m.name} ${replaced ? "replaced" : "uploaded"} by ${by} (${count(row.resource_count, "resource")})`,
      actor: a.actor,
      target: { id: m.name, name: m.name, type: "module" },
      metadata: {
        sha256: row.sha256,
        resources: row.resource_count,
        replaced,
        bytes: Buffer.byteLength(m.content),
        ...origin,
      },
    });
    out[replaced ? "updated" : "created"]++;
  }
  // Same content as held: no new version, so no module.uploaded; the file is simply back.
  for (const m of modules.restored) {
    await modulesDb.upsert(db, moduleRow(w, m));
    out.updated++;
  }
}

const assignmentRow = ({ a }: Writing, t: TreeAssignment, old?: AssignmentRow): AssignmentRow => ({
  name: t.name,
  ...definitionOf(t),
  created_at: old?.created_at ?? a.now,
  created_by: old?.created_by ?? a.actor.id,
  source: a.source,
  source_commit: a.commit,
});

async function writeAssignments(w: Writing): Promise<void> {
  const { db, emit, a, by, origin, out } = w;
  for (const t of a.diff.assignments.created) {
    const row = assignmentRow(w, t);
    await assignmentsDb.insert(db, row);
    await emit({
      type: "assignment.created",
      summary: `assignment ${row.name} (${row.selector} → ${row.modules.join(", ")}${parametersNote(Object.keys(row.parameters).sort())}) created by ${by}`,
      actor: a.actor,
      target: { id: row.name, name: row.name, type: "assignment" },
      metadata: {
        selector: row.selector,
        modules: row.modules,
        enforce: row.enforce,
        parameters: Object.keys(row.parameters).sort(),
        ...origin,
      },
    });
    out.created++;
  }
  for (const { next, old } of a.diff.assignments.updated) {
    const row = assignmentRow(w, next, old);
    await assignmentsDb.update(db, row);
    const changed = changedParameters(old.parameters, row.parameters);
    await emit({
      type: "assignment.updated",
      summary: `assignment ${row.name} (${row.selector} → ${row.modules.join(", ")}${parametersNote(changed, " changed")}) updated by ${by}`,
      actor: a.actor,
      target: { id: row.name, name: row.name, type: "assignment" },
      metadata: {
        selector: row.selector,
        modules: row.modules,
        enforce: row.enforce,
        parameters_changed: changed,
        previous: { selector: old.selector, modules: old.modules, description: old.description, enforce: old.enforce },
        ...origin,
      },
    });
    out.updated++;
  }
}

async function removeAssignments({ db, emit, a, by, origin, out }: Writing): Promise<void> {
  for (const old of a.diff.assignments.removed) {
    const row = await assignmentsDb.remove(db, old.name);
    if (!row) continue;
    await emit({
      type: "assignment.deleted",
      summary: `assignment ${row.name} deleted by ${by}`,
      actor: a.actor,
      target: { id: row.name, name: row.name, type: "assignment" },
      metadata: { selector: row.selector, modules: row.modules, ...origin },
    });
    out.removed++;
  }
}

/** Assignments created through the API may use a managed module: it stays, marked, until unused. */
async function removeModules({ db, emit, a, by, origin, out }: Writing): Promise<void> {
  for (const old of a.diff.modules.removed) {
    const users = await assignmentsDb.usingModule(db, old.name);
    if (users.length) {
      out.kept.push(old.name);
      if (!old.removed_from_source) {
        await sourceCatalogDb.markRemoved(db, old.name);
        out.removed++;
      }
      continue;
    }
    await modulesDb.remove(db, old.name);
    await emit({
      type: "module.deleted",
      summary: `module ${old.name} deleted by ${by}`,
      actor: a.actor,
      target: { id: old.name, name: old.name, type: "module" },
      metadata: { sha256: old.sha256, ...origin },
    });
    out.removed++;
  }
}
