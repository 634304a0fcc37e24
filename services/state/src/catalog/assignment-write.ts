// Assignment writes as the API makes them (create, replace, remove), shared by the direct handlers and
// the execution of an approved catalog.write (approvals/catalog-write.ts).
import type { CreateAssignmentRequest } from "@orch/contracts";
import type { WriteHooks } from "../approvals/catalog-content.js";
import { conflict, isUniqueViolation, notFound, type Actor, type Queryable } from "@orch/kit";
import { assignmentsDb, modulesDb, type AssignmentRow, type ModuleRow } from "../db/catalog.js";
import {
  changedParameters,
  declaringModules,
  parametersNote,
  requireParameters,
} from "../engine/assignment-parameters.js";
import type { Engine } from "../engine/index.js";
import type { ModuleCache } from "../engine/modules.js";
import { checkDefinition, validName } from "../validate.js";
import { refuseManaged } from "../handlers/managed.js";

/** Refuses module names that do not exist; the found modules stay locked against deletion (and re-upload) until commit. */
async function requireModules(db: Queryable, modules: string[]): Promise<ModuleRow[]> {
  const rows = await modulesDb.getManyForShare(db, modules);
  const found = new Set(rows.map((m) => m.name));
  const missing = modules.find((m) => !found.has(m));
  if (missing) throw notFound("module_not_found", `no module '${missing}'`, { field: "modules", module: missing });
  return rows;
}

/** The modules exist and the given parameters suit their declarations; returns the parameters to store. */
async function requireDefinition(
  db: Queryable,
  cache: ModuleCache,
  modules: string[],
  given: unknown,
): Promise<Record<string, unknown>> {
  const rows = await requireModules(db, modules);
  return requireParameters(declaringModules(cache, rows, modules), given);
}

/** A validated assignment write: the definition (parameters checked again against the modules when written). */
export interface AssignmentInput {
  name: string;
  selector: string;
  modules: string[];
  description: string | null;
  /** Absent: false on create, unchanged on update. */
  enforce?: boolean;
  parameters?: unknown;
}

/** What a create or update asks for, checked as far as it can be without the database. */
export function assignmentInput(
  req: Omit<CreateAssignmentRequest, "$typeName" | "reason" | "breakGlass">,
): AssignmentInput {
  const name = validName(req.name, "name", "assignment");
  return {
    name,
    ...checkDefinition(req),
    ...(req.enforce !== undefined ? { enforce: req.enforce } : {}),
    ...(req.parameters !== undefined ? { parameters: req.parameters } : {}),
  };
}

type Hooks = WriteHooks<AssignmentRow>;

/** Creates an assignment: the write the API and an approved change request share. */
export async function insertAssignment(
  { deps, cache }: Engine,
  input: AssignmentInput,
  actor: Actor,
  hooks: Hooks = {},
): Promise<AssignmentRow> {
  const { name, modules } = input;
  const row: AssignmentRow = {
    name,
    selector: input.selector,
    modules,
    description: input.description,
    created_at: deps.clock.now(),
    created_by: actor.id,
    enforce: input.enforce ?? false,
    source: null,
    source_commit: "",
    apply_on_sync: false,
    sync_batch: "",
    sync_max_failures: null,
    parameters: {},
  };
  try {
    await deps.events.tx(async (db, emit) => {
      if (hooks.locked) await hooks.locked(db, await assignmentsDb.get(db, name));
      row.parameters = await requireDefinition(db, cache, modules, input.parameters);
      await assignmentsDb.insert(db, row);
      const names = Object.keys(row.parameters).sort();
      await emit({
        type: "assignment.created",
        summary: `assignment ${name} (${row.selector} → ${modules.join(", ")}${parametersNote(names)}) created by ${actor.name}`,
        actor,
        target: { id: name, name, type: "assignment" },
        metadata: { selector: row.selector, modules, enforce: row.enforce, parameters: names, ...hooks.metadata },
      });
      await hooks.done?.(db, row);
    });
  } catch (err) {
    if (isUniqueViolation(err))
      throw conflict("assignment_exists", `an assignment named '${name}' already exists`, { field: "name" });
    throw err;
  }
  return row;
}

/** Replaces an assignment's definition: the write the API and an approved change request share. */
export async function replaceAssignment(
  { deps, cache }: Engine,
  input: AssignmentInput,
  actor: Actor,
  hooks: Hooks = {},
): Promise<AssignmentRow> {
  return deps.events.tx(async (db, emit) => {
    const old = await assignmentsDb.getForUpdate(db, input.name);
    await hooks.locked?.(db, old);
    if (!old) throw notFound("assignment_not_found", `no assignment '${input.name}'`);
    refuseManaged("assignment", old);
    // Parameters are part of the definition: replaced like the modules they are given to.
    const parameters = await requireDefinition(db, cache, input.modules, input.parameters);
    // Enforce mode is kept unless the request says otherwise.
    const row: AssignmentRow = {
      ...old,
      selector: input.selector,
      modules: input.modules,
      description: input.description,
      parameters,
      enforce: input.enforce ?? old.enforce,
    };
    await assignmentsDb.update(db, row);
    const changed = changedParameters(old.parameters, parameters);
    await emit({
      type: "assignment.updated",
      summary: `assignment ${row.name} (${row.selector} → ${row.modules.join(", ")}${parametersNote(changed, " changed")}) updated by ${actor.name}`,
      actor,
      target: { id: row.name, name: row.name, type: "assignment" },
      metadata: {
        selector: row.selector,
        modules: row.modules,
        enforce: row.enforce,
        parameters_changed: changed,
        previous: {
          selector: old.selector,
          modules: old.modules,
          description: old.description,
          enforce: old.enforce,
        },
        ...hooks.metadata,
      },
    });
    await hooks.done?.(db, row);
    return row;
  });
}

/** Deletes an assignment: the write the API and an approved change request share. */
export async function removeAssignment({ deps }: Engine, name: string, actor: Actor, hooks: Hooks = {}): Promise<void> {
  await deps.events.tx(async (db, emit) => {
    const locked = await assignmentsDb.getForUpdate(db, name);
    await hooks.locked?.(db, locked);
    if (!locked) throw notFound("assignment_not_found", `no assignment '${name}'`);
    refuseManaged("assignment", locked);
    const row = (await assignmentsDb.remove(db, name))!;
    await emit({
      type: "assignment.deleted",
      summary: `assignment ${row.name} deleted by ${actor.name}`,
      actor,
      target: { id: row.name, name: row.name, type: "assignment" },
      metadata: { selector: row.selector, modules: row.modules, ...hooks.metadata },
    });
    await hooks.done?.(db, undefined);
  });
}
