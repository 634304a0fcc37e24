import type { FastifyReply } from "fastify";
import { z } from "zod";
import { checkName, NAME_RE, type ErrorReason, APPROVAL_REASON_MAX } from "@orch/contracts";
import { qBool, ruled } from "../schemas.js";

/** Module and assignment names (the state service checks them again). */
export const NAME = ruled(checkName, NAME_RE);
export const ModuleName = z.object({ name: z.string().min(1).max(128) });

/** The fields a catalog write an approval policy may hold takes (catalog.write, docs/approvals.md). */
export const catalogApprovalFields = {
  reason: z
    .string()
    .max(APPROVAL_REASON_MAX)
    .optional()
    .describe("why (kept with the change request an approval policy covering `catalog.write` turns the write into)"),
  break_glass: z
    .boolean()
    .optional()
    .describe("admins: write without the approval a policy asks for; needs `reason`, audited as critical"),
};
/** The same for writes without a JSON body (DELETE, a bundle upload): query parameters. */
export const CatalogApprovalQuery = z.object({
  reason: catalogApprovalFields.reason,
  break_glass: qBool.optional().describe(catalogApprovalFields.break_glass.description ?? ""),
});
/** 202: an approval policy held the write; nothing changed. */
export const HeldOut = z.object({
  status: z.literal("held"),
  change_request_id: z.string().describe("the change request waiting for approval (GET /api/v1/change-requests/{id})"),
  summary: z.string(),
});
/** Said on every catalog write route. */
export const CATALOG_APPROVAL_NOTE =
  "When an approval policy covers `catalog.write` the write is validated, nothing changes, and it answers 202 with the change request it became (`change_request_id`); it executes once approved (docs/approvals.md). An admin may pass `break_glass` with a `reason` instead. Objects a git source owns stay refused (`managed_by_source`).";
/** The codes a held or break-glass catalog write adds to a route's errors. */
export const CATALOG_APPROVAL_ERRORS: { 400: ErrorReason[]; 403: ErrorReason[] } = {
  400: ["break_glass_reason_required"],
  403: ["break_glass_forbidden"],
};
export const approvalOf = (a: { reason?: string | undefined; break_glass?: boolean | undefined } | undefined) => ({
  reason: a?.reason ?? "",
  breakGlass: a?.break_glass ?? false,
});
/** Answers 202 with the change request when the state service held the write; false otherwise. */
export function sentHeld(
  reply: FastifyReply,
  held: { changeRequestId: string; summary: string } | undefined,
): FastifyReply | false {
  if (!held?.changeRequestId) return false;
  return reply.code(202).send({ status: "held", change_request_id: held.changeRequestId, summary: held.summary });
}
