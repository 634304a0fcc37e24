import { z } from "zod";
import type { JoinToken } from "@orch/contracts";
import { iso } from "../schemas.js";
import { JoinTokenState } from "./join-tokens-schemas.js";

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
