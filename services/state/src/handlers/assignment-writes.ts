import type { StateService } from "@orch/contracts";
import { conflict, isUniqueViolation, notFound, type Handlers, type Queryable } from "@orch/kit";
import { assignmentMsg } from "../convert.js";
import { assignmentsDb, modulesDb, type AssignmentRow } from "../db/catalog.js";
import type { Engine } from "../engine/index.js";
import { checkDefinition, validName } from "../validate.js";
import { refuseManaged } from "./managed.js";

type H = Handlers<typeof StateService>;

/** Refuses module names that do not exist; the found modules stay locked against deletion until commit. */
async function requireModules(db: Queryable, modules: string[]): Promise<void> {
  const found = new Set((await modulesDb.getManyForShare(db, modules)).map((m) => m.name));
  const missing = modules.find((m) => !found.has(m));
  if (missing) throw notFound("module_not_found", `no module '${missing}'`, { field: "modules", module: missing });
}

export const createAssignment =
  ({ deps }: Engine): H["createAssignment"] =>
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
    };
    const { modules } = row;
    try {
      await deps.events.tx(async (db, emit) => {
        await requireModules(db, modules);
        await assignmentsDb.insert(db, row);
        await emit({
          type: "assignment.created",
          summary: `assignment ${name} (${row.selector} → ${modules.join(", ")}) created by ${ctx.actor.name}`,
          actor: ctx.actor,
          target: { id: name, name, type: "assignment" },
          metadata: { selector: row.selector, modules, enforce: row.enforce },
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
  ({ deps }: Engine): H["updateAssignment"] =>
  async (req, ctx) => {
    const def = checkDefinition(req);
    return deps.events.tx(async (db, emit) => {
      const old = await assignmentsDb.getForUpdate(db, req.name);
      if (!old) throw notFound("assignment_not_found", `no assignment '${req.name}'`);
      refuseManaged("assignment", old);
      await requireModules(db, def.modules);
      // Enforce mode is kept unless the request says otherwise.
      const row: AssignmentRow = { ...old, ...def, enforce: req.enforce ?? old.enforce };
      await assignmentsDb.update(db, row);
      await emit({
        type: "assignment.updated",
        summary: `assignment ${row.name} (${row.selector} → ${row.modules.join(", ")}) updated by ${ctx.actor.name}`,
        actor: ctx.actor,
        target: { id: row.name, name: row.name, type: "assignment" },
        metadata: {
          selector: row.selector,
          modules: row.modules,
          enforce: row.enforce,
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
