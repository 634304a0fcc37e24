import { z } from "zod";
import type { Passkey } from "@orch/contracts";
import { iso } from "../schemas.js";

export const PasskeyOut = z.object({
  id: z.string(),
  name: z.string(),
  created_at: z.string(),
  last_used_at: z.string().nullable(),
  backed_up: z.boolean().describe("the credential is synced (multi-device), e.g. by a platform password manager"),
  transports: z.array(z.string()),
});

export function passkeyJson(p: Passkey): z.infer<typeof PasskeyOut> {
  return {
    id: p.id,
    name: p.name,
    created_at: iso(p.createdAt),
    last_used_at: p.lastUsedAt ? iso(p.lastUsedAt) : null,
    backed_up: p.backedUp,
    transports: [...p.transports],
  };
}
export const PasskeyList = z.object({ passkeys: z.array(PasskeyOut) });

export const parseOptions = (json: string) => ({ options: JSON.parse(json) as Record<string, unknown> });
