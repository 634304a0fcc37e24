import { z } from "zod";
import { SELECTOR_MAX_LENGTH } from "@orch/contracts";

// Shape only: the grammar is checked by the auth service with the shared parser (400 invalid_selector).
export const AgentSelector = z
  .string()
  .max(SELECTOR_MAX_LENGTH)
  .describe(
    "agent selector (assignment grammar, e.g. `role=web`) limiting the agents the operator reaches; operators only",
  );
export const OperatorId = z.object({ operator_id: z.string().min(1).max(128) });
