import { z } from "zod";
import type { Secret } from "@orch/contracts";
import { iso } from "../schemas.js";

const RestrictionOut = z.object({ node_ids: z.array(z.string()), tags: z.record(z.string(), z.string()) });
export const SecretOut = z.object({
  name: z.string(),
  description: z.string().nullable(),
  expires_at: z.string().nullable(),
  restriction: RestrictionOut.nullable(),
  created_at: z.string(),
  created_by: z.string(),
  updated_at: z.string(),
  updated_by: z.string(),
});

/** Metadata only: this mapping is the one place a Secret becomes JSON, and it has no value field. */
export function secretJson(s: Secret): z.infer<typeof SecretOut> {
  return {
    name: s.name,
    description: s.description || null,
    expires_at: s.expiresAt ? iso(s.expiresAt) : null,
    restriction: s.restriction ? { node_ids: [...s.restriction.nodeIds], tags: { ...s.restriction.tags } } : null,
    created_at: iso(s.createdAt),
    created_by: s.createdBy,
    updated_at: iso(s.updatedAt),
    updated_by: s.updatedBy,
  };
}

/** The 202 of a write a policy held: nothing changed, the new value waits sealed in the secrets service. */
export const HeldOut = z.object({
  status: z.literal("held"),
  change_request_id: z.string(),
  summary: z.string(),
});
export const heldJson = (h: { changeRequestId: string; summary: string }): z.infer<typeof HeldOut> => ({
  status: "held",
  change_request_id: h.changeRequestId,
  summary: h.summary,
});
