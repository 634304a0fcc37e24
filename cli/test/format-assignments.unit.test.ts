import t from "tap";
import type { Assignment, AssignmentRun, StateOperation } from "@orch/client";
import {
  ASSIGNMENT_COLUMNS,
  assignmentFields,
  assignmentRows,
  createdLine,
  runProgressLine,
  runResultLines,
  runStartedLine,
} from "../src/format/assignments.js";
import { formatTable } from "../src/output.js";

const web = {
  name: "web",
  selector: "role=web",
  modules: ["nginx", "users"],
  description: null,
  created_at: "2025-06-01T12:00:00.000Z",
  created_by: "alice",
  enforce: false,
} as Assignment;

t.test("unit: assignments table, an empty one and a long selector", async (t) => {
  const long = {
    ...web,
    name: "all",
    selector: "env in (prod,stage,test),role!=db",
    description: "everything",
    enforce: true,
  };
  t.equal(
    formatTable(ASSIGNMENT_COLUMNS, assignmentRows([web, long])),
    [
      "NAME  SELECTOR                           MODULES      ENFORCE  DESCRIPTION",
      "web   role=web                           nginx,users  no       -",
      "all   env in (prod,stage,test),role!=db  nginx,users  yes      everything",
      "",
    ].join("\n"),
  );
  t.equal(formatTable(ASSIGNMENT_COLUMNS, assignmentRows([])), "NAME  SELECTOR  MODULES  ENFORCE  DESCRIPTION\n");
});

t.test("unit: assignment fields and the created line list modules with spaces", async (t) => {
  t.same(assignmentFields(web), [
    ["name", "web"],
    ["selector", "role=web"],
    ["modules", "nginx, users"],
    ["enforce", "no"],
    ["description", null],
    ["created_at", "2025-06-01T12:00:00.000Z"],
    ["created_by", "alice"],
  ]);
  t.equal(createdLine(web), "Created assignment web: role=web → nginx, users");
});

t.test("unit: a run's progress, start and outcome", async (t) => {
  const run = {
    run_id: "run-1",
    assignment: "web",
    selector: "role=web",
    status: "completed",
    failures: 1,
    operations: [
      { node_id: "n1", name: "web-1", status: "succeeded", operation_id: "op-1" },
      { node_id: "n2", name: null, status: "not_started", operation_id: null },
    ],
  } as unknown as AssignmentRun;
  t.equal(runStartedLine("apply", run), "apply of web started on 2 agents: run run-1");
  t.equal(runProgressLine(run.operations[0]!, false), "  web-1                succeeded");
  const op = {
    id: "op-1",
    kind: "apply",
    node_id: "n1",
    node_name: "web-1",
    status: "succeeded",
    error: null,
    error_code: null,
    summary: { changed: 0, ok: 1, failed: 0, skipped: 0, unsupported: 0 },
    results: [],
  } as unknown as StateOperation;
  t.same(runResultLines("apply", run, [op], false), [
    "apply op-1 on web-1: succeeded — 1 ok",
    "apply on n2: not_started",
    "run run-1 completed: 2 agents, 1 failure",
  ]);
  const one = { ...run, failures: 0, operations: [run.operations[0]!] } as AssignmentRun;
  t.equal(runStartedLine("plan", one), "plan of web started on 1 agent: run run-1");
  t.equal(runResultLines("plan", one, [], false).at(-1), "run run-1 completed: 1 agent, 0 failures");
});
