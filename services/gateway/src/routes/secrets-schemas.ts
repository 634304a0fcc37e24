import { z } from "zod";
import {
  checkRestriction,
  checkSecretDescription,
  checkSecretName,
  checkSecretValue,
  RESTRICTION_MAX_NODE_IDS,
  SECRET_DESCRIPTION_MAX,
  SECRET_NAME_RE,
  APPROVAL_REASON_MAX,
} from "@orch/contracts";
import { invalid } from "@orch/kit";
import { rfc3339, ruled } from "../schemas.js";

// The secrets service's rules (from @orch/contracts); it checks them again for bus callers. No
// message here repeats an input: a secret value must never come back in an error.
export const SecretName = ruled(checkSecretName, SECRET_NAME_RE);
export const Value = ruled(checkSecretValue).describe("plaintext; write-only, never returned");
export const Description = ruled(checkSecretDescription).meta({ maxLength: SECRET_DESCRIPTION_MAX }).nullable();
export const ExpiresAt = rfc3339.nullable().describe("RFC 3339; must be in the future; null = never expires");

const RestrictionObj = z
  .object({
    node_ids: z.array(z.string()).max(RESTRICTION_MAX_NODE_IDS).optional().describe("node ids allowed outright"),
    tags: z.record(z.string(), z.string()).optional().describe("tags an agent must all carry (key → exact value)"),
  })
  .strict();
const RestrictionIn = RestrictionObj.nullable();

const restrictionDoc = (() => {
  const js = z.toJSONSchema(RestrictionObj, { target: "draft-2020-12", io: "input" }) as Record<string, unknown>;
  delete js.$schema;
  return js;
})();
/**
 * Declared loosely so its own check below can answer `invalid_restriction` naming the field; the
 * OpenAPI document still shows the real shape.
 */
export const RestrictionField = z
  .unknown()
  .optional()
  .meta({
    description: "null = any approved agent; else the agent's node id is listed, or it carries every listed tag",
    anyOf: [{ type: "null" }, restrictionDoc],
  });

const restrictionError = (field: string, message: string) =>
  invalid("invalid_restriction", `body field '${field}' ${message}`, {
    field,
    errors: [{ location: "body", field, message }],
  });

export function parseRestriction(raw: unknown): { nodeIds: string[]; tags: Record<string, string> } | null | undefined {
  if (raw === undefined) return undefined;
  const r = RestrictionIn.safeParse(raw);
  if (!r.success) {
    const issue = r.error.issues[0]!;
    throw restrictionError(["restriction", ...issue.path.map(String)].join("."), issue.message);
  }
  if (!r.data) return null;
  const restriction = { nodeIds: r.data.node_ids ?? [], tags: r.data.tags ?? {} };
  const bad = checkRestriction(restriction);
  if (bad) throw restrictionError(bad.field, bad.message);
  return restriction;
}

export const NameParams = z.object({ name: SecretName });

/** What a secret write an approval policy may hold (secret.write, docs/approvals.md) takes. */
export const approvalFields = {
  reason: z
    .string()
    .max(APPROVAL_REASON_MAX)
    .optional()
    .describe("why (kept with the change request an approval policy turns the write into)"),
  break_glass: z
    .boolean()
    .optional()
    .describe("admins: write without the approval a policy asks for; needs `reason`, audited as critical"),
};
