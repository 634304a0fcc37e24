import type { StateService } from "@orch/contracts";
import { keysetPage, notFound, pageCursor, pageLimit, type Handlers } from "@orch/kit";
import { assignmentMsg } from "../convert.js";
import { assignmentsDb } from "../db/catalog.js";
import type { Engine } from "../engine/index.js";
import { getAssignmentRun, listAssignmentRuns, runAssignment } from "./assignment-runs.js";
import { executeChangeRequest, replanChangeRequest } from "./change-requests.js";
import { createAssignment, deleteAssignment, updateAssignment } from "./assignment-writes.js";

type H = Handlers<typeof StateService>;
type AssignmentHandlers = Pick<
  H,
  | "createAssignment"
  | "listAssignments"
  | "getAssignment"
  | "updateAssignment"
  | "deleteAssignment"
  | "runAssignment"
  | "executeChangeRequest"
  | "replanChangeRequest"
  | "getAssignmentRun"
  | "listAssignmentRuns"
>;

const listAssignments =
  ({ deps }: Engine): H["listAssignments"] =>
  async (req) => {
    const limit = pageLimit(req.limit);
    const rows = await assignmentsDb.page(deps.pool, limit + 1, pageCursor(req.cursor, "name"));
    const { page, nextCursor } = keysetPage(rows, limit, (r) => r.name);
    return { assignments: page.map(assignmentMsg), nextCursor };
  };

const getAssignment =
  ({ deps }: Engine): H["getAssignment"] =>
  async (req) => {
    const row = await assignmentsDb.get(deps.pool, req.name);
    if (!row) throw notFound("assignment_not_found", `no assignment '${req.name}'`);
    return assignmentMsg(row);
  };

/** The assignment RPCs: writes (assignment-writes.ts), reads (here) and runs (assignment-runs.ts). */
export function assignmentHandlers(engine: Engine): AssignmentHandlers {
  return {
    createAssignment: createAssignment(engine),
    listAssignments: listAssignments(engine),
    getAssignment: getAssignment(engine),
    updateAssignment: updateAssignment(engine),
    deleteAssignment: deleteAssignment(engine),
    runAssignment: runAssignment(engine),
    executeChangeRequest: executeChangeRequest(engine),
    replanChangeRequest: replanChangeRequest(engine),
    getAssignmentRun: getAssignmentRun(engine),
    listAssignmentRuns: listAssignmentRuns(engine),
  };
}
