import { z } from "zod";
import { CHANGE_REQUEST_STATUSES } from "@orch/contracts";
import { pageQuery, qBool } from "../schemas.js";

/** Request shapes of /api/v1/change-requests (docs/approvals.md). */

/** A request named in the path: unknown ids are the service's 404. */
export const ChangeRequestParams = z.object({ id: z.string().min(1).max(64) });

export const ChangeRequestQuery = pageQuery.extend({
  status: z.enum(CHANGE_REQUEST_STATUSES).optional(),
  mine: qBool.optional().describe("only the caller's own requests"),
  to_approve: qBool.optional().describe("only pending requests the caller may approve and has not decided"),
});

export const DecisionBody = z.object({
  comment: z.string().max(2000).optional().describe("recorded with the decision and in its audit event"),
});
