import type { MessageInitShape } from "@bufbuild/protobuf";
import type { AgentsService, SecretRestriction, SecretSchema } from "@orch/contracts";
import { forbidden, type CallContext, type Client, type ServiceDeps } from "@orch/kit";
import type { SecretsConfig } from "../config.js";
import type { SecretMeta } from "../db.js";
import type { Keyring } from "../keyring.js";
import type { Restriction } from "../restriction.js";

export type SecretsDeps = ServiceDeps<Readonly<SecretsConfig>>;

/** What every handler group gets: the service deps, the keyring and a client of the agents service. */
export interface HandlerContext {
  deps: SecretsDeps;
  keyring: Keyring;
  agents: Pick<Client<typeof AgentsService>, "getAgent">;
}

export const secretRef = (name: string) => ({ id: name, name, type: "secret" });

export function toRestrictionMsg(r: Restriction | null): Pick<SecretRestriction, "nodeIds" | "tags"> | undefined {
  return r ? { nodeIds: [...r.node_ids], tags: { ...r.tags } } : undefined;
}

export function toSecret(m: SecretMeta): MessageInitShape<typeof SecretSchema> {
  const restriction = toRestrictionMsg(m.restriction);
  return {
    name: m.name,
    description: m.description ?? "",
    expiresAt: m.expires_at ?? 0,
    ...(restriction ? { restriction } : {}),
    createdAt: Number(m.created_at),
    createdBy: m.created_by,
    updatedAt: Number(m.updated_at),
    updatedBy: m.updated_by,
  };
}

/** Event metadata describing a secret: never the value, never the ciphertext. */
export function eventMetadata(m: SecretMeta): Record<string, unknown> {
  return {
    description: m.description,
    expires_at: m.expires_at === null ? null : new Date(Number(m.expires_at)).toISOString(),
    restriction: m.restriction,
  };
}

// The gateway enforces roles; the service checks again so a bus caller cannot skip it.
export function requireAdmin(ctx: CallContext): void {
  if (ctx.actor.type !== "system" && ctx.actor.role !== "admin") throw forbidden();
}
