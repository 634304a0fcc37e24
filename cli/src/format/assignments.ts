/** Assignments, and the progress and outcome of their fan-out runs (pure). */
import type {
  Assignment,
  AssignmentPage,
  AssignmentRun as Run,
  AssignmentRunPage,
  StateOperation as Operation,
} from "@orch/client";
import { operationLines, paintStatus } from "./operations.js";
import { count } from "./units.js";
import { formatParams } from "../parameters.js";
import { idsOnly, type OperatorNames } from "../operator-names.js";

export const ASSIGNMENT_COLUMNS = ["NAME", "SELECTOR", "MODULES", "ENFORCE", "DESCRIPTION"];

const yesNo = (b: boolean) => (b ? "yes" : "no");

export function assignmentRows(assignments: AssignmentPage["assignments"]): unknown[][] {
  return assignments.map((a) => [a.name, a.selector, a.modules.join(","), yesNo(a.enforce), a.description]);
}

export function assignmentFields(a: Assignment, names: OperatorNames = idsOnly): [string, unknown][] {
  return [
    ["name", a.name],
    ["selector", a.selector],
    ["modules", a.modules.join(", ")],
    ["enforce", yesNo(a.enforce)],
    ["description", a.description],
    ["created_at", a.created_at],
    ["created_by", names(a.created_by)],
    // Shown only when given: most assignments' modules declare none.
    ...(a.parameters && Object.keys(a.parameters).length
      ? [["parameters", formatParams(a.parameters)] as [string, unknown]]
      : []),
  ];
}

export const createdLine = (a: Assignment) => `Created assignment ${a.name}: ${a.selector} → ${a.modules.join(", ")}`;

export const RUN_COLUMNS = ["RUN", "KIND", "STATUS", "FAILURES", "CREATED", "FINISHED", "BY"];

export function runRows(runs: AssignmentRunPage["runs"], names: OperatorNames = idsOnly): unknown[][] {
  return runs.map((r) => [r.run_id, r.kind, r.status, r.failures, r.created_at, r.finished_at, names(r.started_by)]);
}

type Kind = "apply" | "plan";

/** Printed instead of following a run (--no-wait). */
export const runStartedLine = (kind: Kind, run: Run) =>
  `${kind} of ${run.assignment} started on ${count(run.operations.length, "agent")}: run ${run.run_id}`;

/** The note a followed run starts with. */
export const runFollowingLine = (kind: Kind, run: Run) =>
  `${kind} of ${run.assignment} (${run.selector}) on ${count(run.operations.length, "agent")}, run ${run.run_id}`;

/** One agent's new status while a run is followed. */
export const runProgressLine = (o: Run["operations"][number], color: boolean) =>
  `  ${(o.name || o.node_id).padEnd(20)} ${paintStatus(color, o.status)}`;

/** Every finished operation with its results, the agents never started, and a closing line. */
export function runResultLines(kind: Kind, run: Run, ops: readonly Operation[], color: boolean): string[] {
  const lines = ops.flatMap((op) => operationLines(op, color));
  for (const o of run.operations.filter((x) => x.status === "not_started"))
    lines.push(`${kind} on ${o.name || o.node_id}: ${paintStatus(color, "not_started")}`);
  lines.push(
    `run ${run.run_id} ${run.status}: ${count(run.operations.length, "agent")}, ${count(run.failures, "failure")}`,
  );
  return lines;
}
