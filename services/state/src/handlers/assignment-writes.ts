import type { StateService } from "@orch/contracts";
import { conflict, isUniqueViolation, notFound, type Handlers, type Queryable } from "@orch/kit";
import { assignmentMsg } from "../convert.js";
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
import { refuseManaged } from "./managed.js";

type H = Handlers<typeof StateService>;

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

export const createAssignment =
  ({ deps, cache }: Engine): H["createAssignment"] =>
  async (req, ctx) => {
    const name = validName(req.name, "name", "assignment");
    const row: AssignmentRow = {
      name,
      ...checkDefinition(req),
      created_at: deps.clock.now(),
      created_by: ctx.actor.id,
      enforce: req.enforce ?? false,
      source: null,
      source_commit: "",
      apply_on_sync: false,
      sync_batch: "",
      sync_max_failures: null,
      parameters: {},
    };
    const { modules } = row;
    try {
      await deps.events.tx(async (db, emit) => {
        row.parameters = await requireDefinition(db, cache, modules, req.parameters);
        await assignmentsDb.insert(db, row);
        const names = Object.keys(row.parameters).sort();
        await emit({
          type: "assignment.created",
          summary: `assignment ${name} (${row.selector} → ${modules.join(", ")}${parametersNote(names)}) created by ${ctx.actor.name}`,
          actor: ctx.actor,
          target: { id: name, name, type: "assignment" },
          metadata: { selector: row.selector, modules, enforce: row.enforce, parameters: names },
        });
      });
    } catch (err) {
      if (isUniqueViolation(err))
        throw conflict("assignment_exists", `an assignment named '${name}' already exists`, { field: "name" });
      throw err;
    }
    return assignmentMsg(row);
  };

export const updateAssignment =
  ({ deps, cache }: Engine): H["updateAssignment"] =>
  async (req, ctx) => {
    const def = checkDefinition(req);
    return deps.events.tx(async (db, emit) => {
      const old = await assignmentsDb.getForUpdate(db, req.name);
      if (!old) throw notFound("assignment_not_found", `no assignment '${req.name}'`);
      refuseManaged("assignment", old);
      // Parameters are part of the definition: replaced like the modules they are given to.
      const parameters = await requireDefinition(db, cache, def.modules, req.parameters);
      // Enforce mode is kept unless the request says otherwise.
      const row: AssignmentRow = { ...old, ...def, parameters, enforce: req.enforce ?? old.enforce };
      await assignmentsDb.update(db, row);
      const changed = changedParameters(old.parameters, parameters);
      await emit({
        type: "assignment.updated",
        summary: `assignment ${row.name} (${row.selector} → ${row.modules.join(", ")}${parametersNote(changed, " changed")}) updated by ${ctx.actor.name}`,
        actor: ctx.actor,
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
        },
      });
      return assignmentMsg(row);
    });
  };

export const deleteAssignment =
  ({ deps }: Engine): H["deleteAssignment"] =>
  async (req, ctx) => {
    await deps.events.tx(async (db, emit) => {
      const locked = await assignmentsDb.getForUpdate(db, req.name);
      if (!locked) throw notFound("assignment_not_found", `no assignment '${req.name}'`);
      refuseManaged("assignment", locked);
      const row = (await assignmentsDb.remove(db, req.name))!;
      await emit({
        type: "assignment.deleted",
        summary: `assignment ${row.name} deleted by ${ctx.actor.name}`,
        actor: ctx.actor,
        target: { id: row.name, name: row.name, type: "assignment" },
        metadata: { selector: row.selector, modules: row.modules },
      });
    });
    return {};
  };
