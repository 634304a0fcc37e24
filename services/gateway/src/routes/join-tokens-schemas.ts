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
  type Violation,
} from "@orch/contracts";
import { KEY_RULE, MAX_TAGS, VALUE_RULE, checkTags, fieldError } from "./agents-schemas.js";

/**
 * Join tokens as the API shows them. The rules come from @orch/contracts and run in the handler
 * (not the schema) so the codes and `field` match the agents service's answers.
 */
export const JoinTokenState = z.enum(["active", "expired", "exhausted", "revoked"]);

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

export const TokenId = z.object({ id: z.string().min(1).max(64).describe("join token id") });
