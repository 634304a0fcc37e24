import { APPROVAL_REASON_MAX } from "@orch/contracts";
import type { JsonObject } from "@bufbuild/protobuf";
import { z } from "zod";
import { batchField, maxFailuresField, qInt, Ulid } from "../schemas.js";
import { NAME } from "./modules-schemas.js";

export const AssignmentName = z.object({ name: z.string().min(1).max(128) });
export const RunParams = z.object({ name: z.string().min(1).max(128), run_id: Ulid });
/** What an assignment is: the body of create (with its name) and of update (name in the path). */
export const Definition = z.object({
  selector: z.string().min(1).max(4096),
  modules: z.array(NAME).min(1).max(100),
  description: z.string().max(1000).nullable().optional(),
  enforce: z
    .boolean()
    .optional()
    .describe(
      "enforce mode: drift a scheduled check finds is re-applied (outside maintenance windows, at most once per agent per `state.enforce_interval_seconds`); absent = false on create, unchanged on update",
    ),
  parameters: z
    .record(z.string(), z.unknown())
    .optional()
    .describe(
      "values for the parameters its modules declare (module version 2, docs/modules.md#parameters), checked against their types; a string holding `{{ … }}` is rendered per agent. Absent = none; an update replaces them like the rest of the definition",
    ),
});
/** How create and update refuse parameters that do not suit the modules' declarations. */
export const PARAMETER_ERRORS = ["unknown_parameter", "missing_parameter", "invalid_parameter"] as const;
export const SELECTOR_GRAMMAR =
  "Selector grammar: `*`, or comma-separated terms that must all hold: `k=v`, `k!=v`, `k in (a,b)`, `k notin (a,b)`, `k`, `!k`; keys are tags, or `name`, `node_id`, `attr.<attribute>`; values may use `*` globs. A parse error is 400 `invalid_selector` with the `position`.";
export const definitionMsg = (name: string, body: z.infer<typeof Definition>) => ({
  name,
  selector: body.selector,
  modules: body.modules,
  ...(body.description != null ? { description: body.description } : {}),
  ...(body.enforce !== undefined ? { enforce: body.enforce } : {}),
  ...(body.parameters !== undefined ? { parameters: body.parameters as JsonObject } : {}),
});
export const WaitQuery = z.object({
  wait: qInt(0, 300).optional().describe("block up to this many seconds for the whole fan-out; 200 when it finished"),
});
/** The fields an apply an approval policy may hold takes (docs/approvals.md): assignment and agent applies. */
export const approvalFields = {
  reason: z
    .string()
    .max(APPROVAL_REASON_MAX)
    .optional()
    .describe("apply only: why (kept with the change request an approval policy turns the apply into)"),
  break_glass: z
    .boolean()
    .optional()
    .describe(
      "apply only, admins: execute without the approval a policy asks for; needs `reason`, audited as critical",
    ),
};
export const RunBody = z
  .object({
    batch: batchField("rolling apply: agents per batch, or a percentage of the matched agents"),
    max_failures: maxFailuresField("stop launching batches once more operations than this failed"),
    ...approvalFields,
  })
  .optional();
