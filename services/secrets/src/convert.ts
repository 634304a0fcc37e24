import type { MessageInitShape } from "@bufbuild/protobuf";
import type { SecretRestriction, SecretSchema } from "@orch/contracts";
import type { SecretMeta, SecretRow } from "./db/secrets.js";
import type { Sealed } from "./keyring.js";
import type { Restriction } from "./restriction.js";

/** The audit target of an event about a secret. */
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

export const sealedOf = (r: Pick<SecretRow, "key_id" | "nonce" | "ciphertext" | "auth_tag">): Sealed => ({
  keyId: r.key_id,
  nonce: r.nonce,
  ciphertext: r.ciphertext,
  tag: r.auth_tag,
});
