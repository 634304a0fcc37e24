import t from "tap";
import type { BelievedState, DriftRecord, StateOperation } from "@orch/client";
import {
  OPERATION_COLUMNS,
  STATE_COLUMNS,
  colorDiff,
  driftLines,
  operationLines,
  operationRows,
  outputLines,
  stateRows,
  summaryText,
} from "../src/format/operations.js";
import { formatTable } from "../src/output.js";

const op = {
  id: "op-1",
  kind: "apply",
  node_id: "0123456789abcdef0123456789abcdef",
  node_name: "web-1",
  status: "succeeded",
  modules: ["nginx", "users"],
  created_at: "2025-06-01T12:00:00.000Z",
  error: null,
  error_code: null,
  summary: { changed: 1, ok: 2, failed: 0, skipped: 0, unsupported: 0 },
  results: [
    {
      module: "nginx",
      id: "conf",
      type: "file",
      status: "changed",
      changed: true,
      message: "",
      diff: "--- a\n+++ b\n@@ -1 +1 @@\n-old\n+new\n",
    },
    { module: "users", id: "bob", type: "user", status: "ok", changed: false, message: "", diff: "" },
    {
      module: "nginx",
      id: "reload",
      type: "exec",
      status: "ok",
      changed: false,
      message: "not run: none of nginx/conf changed",
      diff: "",
    },
    {
      module: "users",
      id: "eve",
      type: "user",
      status: "failed",
      changed: false,
      message: "useradd: exit 9\nmore detail",
      diff: "",
    },
  ],
} as unknown as StateOperation;

t.test(
  "unit: an operation prints a headline, one line per resource (with why an ok one did not run) and the diff of what changed",
  async (t) => {
    t.same(operationLines(op, false), [
      "apply op-1 on web-1: succeeded — 1 changed, 2 ok",
      "  changed     nginx/conf (file)",
      "      --- a\n      +++ b\n      @@ -1 +1 @@\n      -old\n      +new",
      "  ok          users/bob (user)",
      "  ok          nginx/reload (exec) — not run: none of nginx/conf changed",
      "  failed      users/eve (user) — useradd: exit 9",
    ]);
  },
);

t.test("unit: an open operation has no summary; an error code is named", async (t) => {
  const open = { ...op, status: "running", results: [] } as StateOperation;
  t.same(operationLines(open, false), ["apply op-1 on web-1: running"]);
  const failed = { ...op, node_name: null, status: "failed", error_code: "timeout", error: "no answer", results: [] };
  t.same(operationLines(failed as unknown as StateOperation, false), [
    "apply op-1 on 0123456789abcdef0123456789abcdef: failed (timeout: no answer) — 1 changed, 2 ok",
  ]);
  t.equal(
    summaryText({ changed: 0, ok: 0, failed: 0, skipped: 0, unsupported: 0 } as StateOperation["summary"]),
    "no resources",
  );
});

t.test("unit: colour codes wrap diff lines and statuses only when asked", async (t) => {
  t.equal(colorDiff("+a\n-b\n c", true), "\x1b[32m+a\x1b[0m\n\x1b[31m-b\x1b[0m\n c");
  t.equal(colorDiff("+a\n-b", false), "+a\n-b");
  t.equal(operationLines(op, true)[0], "apply op-1 on web-1: \x1b[32msucceeded\x1b[0m — 1 changed, 2 ok");
});

t.test("unit: operations table, and an empty one", async (t) => {
  const failed = { ...op, id: "op-2", node_name: "", error_code: "unreachable" } as unknown as StateOperation;
  t.equal(
    formatTable(OPERATION_COLUMNS, operationRows([op, failed])),
    [
      "ID    AGENT                             KIND   STATUS     MODULES      CREATED                   SUMMARY",
      "op-1  web-1                             apply  succeeded  nginx,users  2025-06-01T12:00:00.000Z  1 changed, 0 failed",
      "op-2  0123456789abcdef0123456789abcdef  apply  succeeded  nginx,users  2025-06-01T12:00:00.000Z  unreachable",
      "",
    ].join("\n"),
  );
  t.equal(formatTable(OPERATION_COLUMNS, operationRows([])), "ID  AGENT  KIND  STATUS  MODULES  CREATED  SUMMARY\n");
});

t.test("unit: drift lists each differing resource with an indented diff", async (t) => {
  const record = {
    id: "d-1",
    operation_id: "op-9",
    checked_at: "2025-06-01T12:00:00.000Z",
    drifted: true,
    resources: [{ module: "m", id: "f", type: "file", status: "changed", message: "content\nx", diff: "-a\n+b\n" }],
  } as unknown as DriftRecord;
  t.same(driftLines(record, false), [
    "drifted: 1 resource differs (checked 2025-06-01T12:00:00.000Z, drift d-1, operation op-9)",
    "  changed m/f (file) — content",
    "      -a\n      +b",
  ]);
  const clean = { ...record, drifted: false, resources: [] } as DriftRecord;
  t.same(driftLines(clean, false), [
    "in sync: 0 resources differ (checked 2025-06-01T12:00:00.000Z, drift d-1, operation op-9)",
  ]);
});

t.test("unit: believed state as a table", async (t) => {
  const resources = [
    {
      module: "nginx",
      id: "conf",
      type: "file",
      status: "changed",
      operation_id: "op-1",
      applied_at: "2025-06-01T12:00:00.000Z",
    },
  ] as BelievedState["resources"];
  t.equal(
    formatTable(STATE_COLUMNS, stateRows(resources)),
    "MODULE  RESOURCE  TYPE  STATUS   OPERATION  APPLIED\nnginx   conf      file  changed  op-1       2025-06-01T12:00:00.000Z\n",
  );
});

t.test("unit: captured output, stderr only when there is some", async (t) => {
  t.same(outputLines([]), ["no captured output"]);
  t.same(
    outputLines([
      { module: "m", id: "a", stdout: "hello\n", stderr: "" },
      { module: "m", id: "b", stdout: "", stderr: "oops\nline 2\n" },
    ] as Parameters<typeof outputLines>[0]),
    ["== m/a stdout", "hello", "== m/b stdout", "== m/b stderr", "oops\nline 2"],
  );
});
