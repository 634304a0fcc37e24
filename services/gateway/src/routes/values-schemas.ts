import type { JsonObject } from "@bufbuild/protobuf";
import { z } from "zod";
import { VALUE_KEY_RULE, VALUE_PRIORITY_MAX, VALUE_PRIORITY_MIN, VALUE_SET_MAX_BYTES } from "@orch/contracts";

/** Value sets and agents' values (docs/modules.md#values); the state service checks every rule. */
export const ValueSetName = z.object({ name: z.string().min(1).max(128) });

const valuesField = z
  .record(z.string(), z.unknown())
  .describe(`a map; keys ${VALUE_KEY_RULE}; maps merge over lower layers, lists and scalars replace`);
const contentField = z
  .string()
  .max(VALUE_SET_MAX_BYTES * 2)
  .describe(
    `the values as YAML text (a map), at most ${VALUE_SET_MAX_BYTES / 1024} KiB; kept, so origins name its lines. Give values or content, not both`,
  );

export const ValueSetBody = z.object({
  selector: z
    .string()
    .max(4096)
    .optional()
    .describe(
      "agents it applies to (assignment selector grammar); none for the set named `defaults`, required otherwise",
    ),
  priority: z
    .number()
    .int()
    .min(VALUE_PRIORITY_MIN)
    .max(VALUE_PRIORITY_MAX)
    .optional()
    .describe(
      "order among selector-bound sets: higher wins; equal priorities are ordered by name (the later name wins)",
    ),
  description: z.string().max(1000).optional(),
  values: valuesField.optional(),
  content: contentField.optional(),
});

export const AgentValuesBody = z.object({
  values: valuesField.optional().describe("the agent's own values, the highest layer; {} clears them"),
  content: contentField.optional(),
});

export const VALUE_ERRORS = ["invalid_values", "secret_in_values", "values_too_large"] as const;

export const valueSetMsg = (name: string, body: z.infer<typeof ValueSetBody>) => ({
  name,
  selector: body.selector ?? "",
  priority: body.priority ?? 0,
  description: body.description ?? "",
  ...(body.values !== undefined ? { values: body.values as JsonObject } : {}),
  content: body.content ?? "",
});
