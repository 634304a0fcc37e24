import type { Actor, Emit, Queryable } from "@orch/kit";
import { eventMetadata, secretRef } from "./convert.js";
import type { MetaChanges } from "./db/pending.js";
import { secretsDb, type SecretMeta } from "./db/secrets.js";
import type { Sealed } from "./keyring.js";
import { changedFields } from "./write-content.js";

/**
 * The one way a secret is created, updated or deleted, inside the caller's transaction: the direct
 * call and an approved change request (handlers/change-requests.ts) share it, so both write and
 * audit alike. An approved write's event stays the requester's and names the request and approvers.
 */
export interface WriteApproval {
  changeRequestId: string;
  approvers: string[];
}

const approvalMetadata = (a: WriteApproval | undefined) =>
  a ? { change_request_id: a.changeRequestId, approved_by: a.approvers } : {};

/** Inserts the secret (a duplicate name is the caller's unique violation); answers its version. */
export async function createWrite(
  db: Queryable,
  emit: Emit,
  w: { meta: SecretMeta; sealed: Sealed; actor: Actor; approval?: WriteApproval | undefined },
): Promise<string> {
  const version = await secretsDb.insert(db, w.meta, w.sealed);
  await emit({
    type: "secret.created",
    summary: `secret ${w.meta.name} created by ${w.actor.name}`,
    actor: w.actor,
    target: secretRef(w.meta.name),
    metadata: { ...eventMetadata(w.meta), key_id: w.sealed.keyId, ...approvalMetadata(w.approval) },
  });
  return version;
}

/** Applies the changes to the locked row (the caller checked who may make them); answers the new state. */
export async function updateWrite(
  db: Queryable,
  emit: Emit,
  w: {
    row: SecretMeta;
    changes: MetaChanges;
    sealed?: Sealed | undefined;
    actor: Actor;
    now: number;
    approval?: WriteApproval | undefined;
  },
): Promise<{ meta: SecretMeta; version: string }> {
  const { row, changes: ch } = w;
  const next: SecretMeta = { ...row, updated_at: w.now, updated_by: w.actor.id };
  if (ch.description !== undefined) next.description = ch.description;
  if (ch.expires_at !== undefined) next.expires_at = ch.expires_at;
  if (ch.restriction !== undefined) next.restriction = ch.restriction;
  const metadata: Record<string, unknown> = {};
  if (w.sealed) {
    await secretsDb.updateSealed(db, row.name, w.sealed);
    metadata.key_id = w.sealed.keyId;
  }
  const version = await secretsDb.updateMeta(db, next);
  const changed = changedFields(w.sealed !== undefined, ch);
  await emit({
    type: "secret.updated",
    summary: `secret ${row.name} updated by ${w.actor.name} (${changed.join(", ")})`,
    actor: w.actor,
    target: secretRef(row.name),
    metadata: { changed, ...eventMetadata(next), ...metadata, ...approvalMetadata(w.approval) },
  });
  return { meta: next, version };
}

/** Deletes the secret; undefined when there was none. */
export async function deleteWrite(
  db: Queryable,
  emit: Emit,
  w: { name: string; actor: Actor; approval?: WriteApproval | undefined },
): Promise<SecretMeta | undefined> {
  const row = await secretsDb.remove(db, w.name);
  if (!row) return undefined;
  await emit({
    type: "secret.deleted",
    summary: `secret ${row.name} deleted by ${w.actor.name}`,
    actor: w.actor,
    target: secretRef(row.name),
    metadata: { ...eventMetadata(row), ...approvalMetadata(w.approval) },
  });
  return row;
}
