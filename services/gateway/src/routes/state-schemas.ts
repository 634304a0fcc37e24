import { z } from "zod";
import { pageQuery, qInt } from "../schemas.js";
import { approvalFields } from "./assignments-schemas.js";
import { NAME } from "./modules-schemas.js";
import { OperationStatus } from "./state-json.js";

export const NodeId = z.object({ node_id: z.string().min(1).max(128) });
export const WaitQuery = z.object({
  wait: qInt(0, 300)
    .optional()
    .describe("block up to this many seconds; 200 with the finished operation when it ended in time"),
});
export const OperationsQuery = pageQuery.extend({
  kind: z.enum(["apply", "plan", "drift"]).optional(),
  status: OperationStatus.optional(),
});

export const RunAgentBody = z.object({ modules: z.array(NAME).min(1).max(100), ...approvalFields });
