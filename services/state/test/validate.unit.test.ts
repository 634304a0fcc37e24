import { OrchError } from "@orch/kit";
import t from "tap";
import {
  checkDefinition,
  checkMaxFailures,
  checkModuleContent,
  checkModuleList,
  checkOperationFilter,
  checkSelector,
  MAX_DESCRIPTION,
  operationsPageLimit,
  planRef,
  planWaitMs,
  runsPageLimit,
} from "../src/validate.js";

// The state service's input rules (validate.ts), called by its handlers and by a git source's
// assignment files alike; the handlers' answers are covered by the API tests.

const refusal = (f: () => unknown) => {
  try {
    f();
  } catch (err) {
    if (err instanceof OrchError) return { reason: err.reason, message: err.message, details: err.details };
    throw err;
  }
  return undefined;
};

t.test("selectors: the position of a syntax error is reported", async (t) => {
  t.equal(
    refusal(() => checkSelector("role=web")),
    undefined,
  );
  t.match(
    refusal(() => checkSelector("role=")),
    { reason: "invalid_selector", details: { field: "selector" } },
  );
});

t.test("module lists: one to 100 valid names, repeats dropped", async (t) => {
  t.same(checkModuleList(["a", "b", "a"]), ["a", "b"]);
  t.match(
    refusal(() => checkModuleList([])),
    { message: "modules must name at least one module" },
  );
  t.match(
    refusal(() => checkModuleList(Array.from({ length: 101 }, (_, i) => `m${i}`))),
    {
      message: "at most 100 modules",
    },
  );
  t.match(
    refusal(() => checkModuleList(["ok", "Not Valid"])),
    { details: { field: "modules.1" } },
  );
});

t.test("definitions: the selector is stored trimmed; a description has a length limit", async (t) => {
  t.same(checkDefinition({ selector: " role=web ", modules: ["a"] }), {
    selector: "role=web",
    modules: ["a"],
    description: null,
  });
  t.equal(
    refusal(() => checkDefinition({ selector: "a=b", modules: ["a"], description: "d".repeat(MAX_DESCRIPTION) })),
    undefined,
  );
  t.match(
    refusal(() => checkDefinition({ selector: "a=b", modules: ["a"], description: "d".repeat(MAX_DESCRIPTION + 1) })),
    {
      reason: "invalid_request",
      details: { field: "description" },
    },
  );
});

t.test("max_failures: absent, or an integer from 0 to int32's maximum", async (t) => {
  for (const ok of [undefined, 0, 3, 2_147_483_647])
    t.equal(
      refusal(() => checkMaxFailures(ok)),
      undefined,
      `${ok}`,
    );
  for (const bad of [-1, 1.5, 2_147_483_648, "3", null])
    t.match(
      refusal(() => checkMaxFailures(bad)),
      { message: "max_failures must be a non-negative integer" },
      `${bad}`,
    );
});

t.test("module content must not be blank", async (t) => {
  t.match(
    refusal(() => checkModuleContent(" \n")),
    { reason: "invalid_module", details: { field: "content" } },
  );
  t.equal(
    refusal(() => checkModuleContent("name: x")),
    undefined,
  );
});

t.test("operation filters and page limits", async (t) => {
  t.equal(
    checkOperationFilter({ runId: "01arz3ndektsv4rrffq69g5fav", kind: "", status: "" }),
    "01ARZ3NDEKTSV4RRFFQ69G5FAV",
  );
  t.match(
    refusal(() => checkOperationFilter({ runId: "nope", kind: "", status: "" })),
    { details: { field: "run_id" } },
  );
  t.match(
    refusal(() => checkOperationFilter({ runId: "", kind: "deploy", status: "" })),
    { details: { field: "kind" } },
  );
  t.match(
    refusal(() => checkOperationFilter({ runId: "", kind: "", status: "done" })),
    { details: { field: "status" } },
  );
  t.equal(operationsPageLimit(undefined, true), 50);
  t.match(
    refusal(() => operationsPageLimit(101, true)),
    { reason: "invalid_limit" },
  );
  t.equal(operationsPageLimit(500, false), 500);
  t.equal(runsPageLimit(200), 200);
  t.match(
    refusal(() => runsPageLimit(201)),
    { reason: "invalid_limit" },
  );
});

t.test("plans: the branch when no ref is given; a bounded wait", async (t) => {
  t.equal(planRef("", "main"), "main");
  t.equal(planRef("v1.2", "main"), "v1.2");
  t.match(
    refusal(() => planRef("bad ref", "main")),
    { details: { field: "ref" } },
  );
  t.equal(planWaitMs(0), 0);
  t.match(
    refusal(() => planWaitMs(-1)),
    { details: { field: "wait_seconds" } },
  );
});
