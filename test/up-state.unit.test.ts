// scripts/lib/up-state.mjs: where `npm run up` keeps its state and how its messages name those
// files, so a stack with ORCH_UP_STATE_DIR is told about (and `npm run agent` trusts) its own files.
import { readFileSync } from "node:fs";
import t from "tap";
import { shownPath, statePath, upStateDir } from "../scripts/lib/up-state.mjs";

t.test("the state dir: ORCH_UP_STATE_DIR, relative to the clone, else the clone's .orch", async (t) => {
  t.equal(upStateDir({}, "/src/orch"), "/src/orch/.orch");
  t.equal(upStateDir({ ORCH_UP_STATE_DIR: "/tmp/stack2" }, "/src/orch"), "/tmp/stack2");
  t.equal(upStateDir({ ORCH_UP_STATE_DIR: "state/b" }, "/src/orch"), "/src/orch/state/b");
  t.equal(upStateDir({ ORCH_UP_STATE_DIR: "" }, "/src/orch"), "/src/orch/.orch", "empty is unset");
});

t.test("messages name a state file relative to the working dir when inside it, else in full", async (t) => {
  t.equal(statePath("/src/orch/.orch", "admin.key", "/src/orch"), ".orch/admin.key");
  t.equal(statePath("/src/orch/.orch", "tls/ca.crt", "/src/orch"), ".orch/tls/ca.crt");
  t.equal(statePath("/tmp/stack2", "tls/ca.crt", "/src/orch"), "/tmp/stack2/tls/ca.crt");
  t.equal(statePath("/src/orch-b/.orch", "admin.key", "/src/orch"), "/src/orch-b/.orch/admin.key", "a sibling dir");
  t.equal(shownPath("/src/orch", "/src/orch"), "/src/orch", "the working dir itself");
  t.equal(shownPath("/src/orch/..data/x", "/src/orch"), "..data/x", "a name starting with .. is inside");
});

t.test("up names no .orch file outside comments: every path follows the state dir", async (t) => {
  const code = readFileSync(new URL("../scripts/up.mjs", import.meta.url), "utf8")
    .split("\n")
    .map((line, i) => ({ line, n: i + 1 }))
    .filter(({ line }) => !line.trim().startsWith("//") && !line.trim().startsWith("*"));
  t.same(
    code.filter(({ line }) => line.includes(".orch")).map(({ line, n }) => `${n}: ${line.trim()}`),
    [],
    "lines of scripts/up.mjs with a hard-coded .orch",
  );
});
