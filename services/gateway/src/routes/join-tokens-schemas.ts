import { z } from "zod";
import {
  checkJoinTokenMaxUses,
  checkJoinTokenNamePrefix,
  checkJoinTokenTtl,
  JOIN_TOKEN_DESCRIPTION_MAX,
  JOIN_TOKEN_MAX_USES_MAX,
  JOIN_TOKEN_NAME_PREFIX_RULE,
  JOIN_TOKEN_TTL_MAX_S,
  JOIN_TOKEN_TTL_MIN_S,
  type JoinToken,
  type Violation,
} from "@orch/contracts";
import { iso } from "../schemas.js";
import { KEY_RULE, MAX_TAGS, VALUE_RULE, checkTags, fieldError } from "./agents-schemas.js";

/**
 * Join tokens as the API shows them. The rules come from @orch/contracts and run in the handler
 * (not the schema) so the codes and `field` match the agents service's answers.
 */
export const JoinTokenState = z.enum(["active", "expired", "exhausted", "revoked"]);

export const JoinTokenOut = z.object({
  id: z.string().describe("the part of the token before the dot; public, names the token in events"),
  description: z.string(),
  tags: z.record(z.string(), z.string()).describe("given to every agent approved through the token"),
  name_prefix: z.string().describe("joined agents are named `<prefix>-<hostname>` (or the hostname alone when empty)"),
  max_uses: z.number().int().describe("0 = unlimited until it expires"),
  uses: z.number().int(),
  created_at: z.string(),
  expires_at: z.string(),
  revoked_at: z.string().nullable(),
  created_by: z.string(),
  created_by_name: z.string(),
  state: JoinTokenState,
});

export const CreateJoinTokenBody = z.object({
  ttl_s: z.number().describe(`lifetime in whole seconds, ${JOIN_TOKEN_TTL_MIN_S}..${JOIN_TOKEN_TTL_MAX_S}`),
  max_uses: z.number().optional().describe(`0 (default) = unlimited; at most ${JOIN_TOKEN_MAX_USES_MAX}`),
  tags: z
    .record(z.string(), z.string())
    .optional()
    .describe(`at most ${MAX_TAGS} tags; keys ${KEY_RULE}; values ${VALUE_RULE}`),
  name_prefix: z.string().optional().describe(`${JOIN_TOKEN_NAME_PREFIX_RULE}; empty = the hostname alone`),
  description: z.string().optional().describe(`at most ${JOIN_TOKEN_DESCRIPTION_MAX} characters`),
});
export type CreateJoinTokenBody = z.infer<typeof CreateJoinTokenBody>;

const refuse = (v: Violation | null, field: string) => {
  if (v) throw fieldError("body", field, v.message, v.reason);
};

/** The agents service's creation rules, applied before the request reaches the bus. */
export function checkCreateJoinToken(b: CreateJoinTokenBody): void {
  refuse(checkJoinTokenTtl(b.ttl_s), "ttl_s");
  refuse(checkJoinTokenMaxUses(b.max_uses ?? 0), "max_uses");
  refuse(checkJoinTokenNamePrefix(b.name_prefix ?? ""), "name_prefix");
  checkTags(b.tags ?? {});
  if ((b.description ?? "").length > JOIN_TOKEN_DESCRIPTION_MAX)
    throw fieldError(
      "body",
      "description",
      `must be at most ${JOIN_TOKEN_DESCRIPTION_MAX} characters`,
      "invalid_description",
    );
}

export function joinTokenJson(t: JoinToken): z.infer<typeof JoinTokenOut> {
  return {
    id: t.id,
    description: t.description,
    tags: { ...t.tags },
    name_prefix: t.namePrefix,
    max_uses: t.maxUses,
    uses: t.uses,
    created_at: iso(t.createdAt),
    expires_at: iso(t.expiresAt),
    revoked_at: t.revokedAt > 0 ? iso(t.revokedAt) : null,
    created_by: t.createdBy,
    created_by_name: t.createdByName,
    state: JoinTokenState.safeParse(t.state).data ?? "active",
  };
}
