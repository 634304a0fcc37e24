import { parseSelector, SelectorError, type StateService } from "@orch/contracts";
import {
  keysetPage,
  conflict,
  invalid,
  notFound,
  pageCursor,
  pageLimit,
  type Handlers,
  type Queryable,
} from "@orch/kit";
import { assignmentMsg, runMsg } from "../convert.js";
import { assignmentsDb, modulesDb, type AssignmentRow } from "../db/catalog.js";
import { operationsDb } from "../db/operations.js";
import { runsDb } from "../db/runs.js";
import { approvedAgents, matchAgents } from "../engine/fanout.js";
import type { Engine } from "../engine/index.js";
import { loadSources } from "../engine/modules.js";
import { reachableNodeIds } from "./agents.js";
import { refuseManaged } from "./managed.js";
import { kindOf, validName, waitMs } from "../validate.js";

type AssignmentHandlers = Pick<
  Handlers<typeof StateService>,
  | "createAssignment"
  | "listAssignments"
  | "getAssignment"
  | "updateAssignment"
  | "deleteAssignment"
  | "runAssignment"
  | "getAssignmentRun"
  | "listAssignmentRuns"
>;

const MAX_MODULES = 100;
/** Characters of an assignment's description (the API and a git source's assignment files alike). */
export const MAX_DESCRIPTION = 1000;
const MAX_RUNS_PAGE = 200;

export function checkSelector(selector: string): void {
  try {
    parseSelector(selector);
  } catch (err) {
    if (err instanceof SelectorError)
      throw invalid("invalid_selector", `selector: ${err.message}`, { field: "selector", position: err.position });
    throw err;
  }
}

export function checkModuleList(modules: readonly string[]): string[] {
  if (modules.length === 0)
    throw invalid("invalid_request", "modules must name at least one module", { field: "modules" });
  if (modules.length > MAX_MODULES)
    throw invalid("invalid_request", `at most ${MAX_MODULES} modules`, { field: "modules" });
  for (const [i, m] of modules.entries()) validName(m, `modules.${i}`, "module");
  return [...new Set(modules)];
}

/** The request's selector, modules and description, validated the same way for create and update. */
function checkDefinition(req: { selector: string; modules: readonly string[]; description?: string }) {
  checkSelector(req.selector);
  const modules = checkModuleList(req.modules);
  if (req.description !== undefined && req.description.length > MAX_DESCRIPTION)
    throw invalid("invalid_request", `description is longer than ${MAX_DESCRIPTION} characters`, {
      field: "description",
    });
  return { selector: req.selector.trim(), modules, description: req.description ?? null };
}

/** Refuses module names that do not exist; the found modules stay locked against deletion until commit. */
async function requireModules(db: Queryable, modules: string[]): Promise<void> {
  const found = new Set((await modulesDb.getManyForShare(db, modules)).map((m) => m.name));
  const missing = modules.find((m) => !found.has(m));
  if (missing) throw notFound("module_not_found", `no module '${missing}'`, { field: "modules", module: missing });
}

export function assignmentHandlers(engine: Engine): AssignmentHandlers {
  const { deps, clients, fanout, cache } = engine;
  const { pool, events, clock } = deps;

  /** `reach`: only these targets (a scoped operator's reachable agents). */
  async function runView(id: string, reach?: readonly string[]) {
    const run = await runsDb.get(pool, id);
    if (!run) throw notFound("run_not_found", `no run '${id}'`);
    const keep = reach && new Set(reach);
    const shown = keep ? { ...run, targets: run.targets.filter((t) => keep.has(t.node_id)) } : run;
    return runMsg(shown, await operationsDb.ofRun(pool, id));
  }

  return {
    async createAssignment(req, ctx) {
      const name = validName(req.name, "name", "assignment");
      const row: AssignmentRow = {
        name,
        ...checkDefinition(req),
        created_at: clock.now(),
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
        await events.tx(async (db, emit) => {
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
        if ((err as { code?: string }).code === "23505")
          throw conflict("assignment_exists", `an assignment named '${name}' already exists`, { field: "name" });
        throw err;
      }
      return assignmentMsg(row);
    },

    async listAssignments(req) {
      const limit = pageLimit(req.limit);
      const rows = await assignmentsDb.page(pool, limit + 1, pageCursor(req.cursor, "name"));
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.name);
      return { assignments: page.map(assignmentMsg), nextCursor };
    },

    async getAssignment(req) {
      const row = await assignmentsDb.get(pool, req.name);
      if (!row) throw notFound("assignment_not_found", `no assignment '${req.name}'`);
      return assignmentMsg(row);
    },

    async updateAssignment(req, ctx) {
      const def = checkDefinition(req);
      return events.tx(async (db, emit) => {
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
    },

    async deleteAssignment(req, ctx) {
      await events.tx(async (db, emit) => {
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
    },

    async runAssignment(req, ctx) {
      const kind = kindOf(req.kind);
      const wait = waitMs(req.waitSeconds);
      if (req.maxFailures !== undefined && (req.maxFailures < 0 || !Number.isInteger(req.maxFailures)))
        throw invalid("invalid_request", "max_failures must be a non-negative integer", { field: "max_failures" });
      const assignment = await assignmentsDb.get(pool, req.name);
      if (!assignment) throw notFound("assignment_not_found", `no assignment '${req.name}'`);
      const sources = await loadSources(pool, cache, assignment.modules);
      const agents = matchAgents(assignment.selector, await approvedAgents(clients, ctx.actor));
      const { run } = await fanout.start({
        assignment,
        kind,
        batch: req.batch.trim(),
        maxFailures: req.maxFailures ?? null,
        actor: ctx.actor,
        sources,
        agents,
      });
      await fanout.waitFor(run.id, wait);
      return runView(run.id);
    },

    async getAssignmentRun(req, ctx) {
      // Another operator's run may have reached agents outside this operator's scope: hide those targets.
      const view = await runView(req.runId, await reachableNodeIds(clients, ctx.actor));
      if (view.assignment !== req.name)
        throw notFound("run_not_found", `no run '${req.runId}' of assignment '${req.name}'`);
      return view;
    },

    async listAssignmentRuns(req) {
      const limit = pageLimit(req.limit, 50, MAX_RUNS_PAGE);
      const cursor = pageCursor(req.cursor, "ulid");
      // No assignment lookup: a deleted assignment's runs stay listable (an unknown name is an empty page).
      const rows = await runsDb.page(pool, req.name, limit + 1, cursor);
      const { page, nextCursor } = keysetPage(rows, limit, (r) => r.id);
      // Targets are left out: the list is a summary, GetAssignmentRun has them (scoped to the operator).
      return { runs: page.map((r) => runMsg({ ...r, targets: [] }, [])), nextCursor };
    },
  };
}
