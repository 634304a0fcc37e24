import type { Queryable } from "@orch/kit";
import type { Sealed } from "../keyring.js";
import type { Restriction } from "../restriction.js";

export type WriteOp = "create" | "update" | "delete";

/** The metadata a held write changes: a key present = that field changes (null clears it). */
export interface MetaChanges {
  description?: string | null;
  /** Unix ms; null = never expires. */
  expires_at?: number | null;
  restriction?: Restriction | null;
}

export interface PendingWrite {
  id: string;
  change_request_id: string | null;
  op: WriteOp;
  name: string;
  key_id: string | null;
  nonce: Buffer | null;
  ciphertext: Buffer | null;
  auth_tag: Buffer | null;
  changes: MetaChanges;
  /** The secret's version the write was planned against (as text); null for a create. */
  base_version: string | null;
  requester_id: string;
  created_at: number | string;
  executed_at: number | string | null;
  result: string | null;
}

const SEALED = "key_id, nonce, ciphertext, auth_tag";

/** Held secret writes (migrations/0002_pending_writes.sql); the value only as ciphertext. */
export const pendingDb = {
  async insert(
    db: Queryable,
    p: Pick<PendingWrite, "id" | "op" | "name" | "changes" | "base_version" | "requester_id"> & {
      sealed: Sealed | null;
      createdAt: number;
    },
  ): Promise<void> {
    const s = p.sealed;
    await db.query(
      `INSERT INTO pending_writes (id, op, name, ${SEALED}, changes, base_version, requester_id, created_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
      [
        p.id,
        p.op,
        p.name,
        s?.keyId ?? null,
        s?.nonce ?? null,
        s?.ciphertext ?? null,
        s?.tag ?? null,
        JSON.stringify(p.changes),
        p.base_version,
        p.requester_id,
        p.createdAt,
      ],
    );
  },
  async bindRequest(db: Queryable, id: string, changeRequestId: string): Promise<void> {
    await db.query("UPDATE pending_writes SET change_request_id = $2 WHERE id = $1", [id, changeRequestId]);
  },
  async remove(db: Queryable, id: string): Promise<void> {
    await db.query("DELETE FROM pending_writes WHERE id = $1", [id]);
  },
  async forUpdate(db: Queryable, id: string): Promise<PendingWrite | undefined> {
    return (
      await db.query<PendingWrite>(
        `SELECT id, change_request_id, op, name, ${SEALED}, changes, base_version::text AS base_version, requester_id,
           created_at, executed_at, result FROM pending_writes WHERE id = $1 FOR UPDATE`,
        [id],
      )
    ).rows[0];
  },
  /** Done, once: the value is dropped (it lives in `secrets` now, or was never needed). */
  async markExecuted(db: Queryable, id: string, changeRequestId: string, at: number, result: string): Promise<void> {
    await db.query(
      `UPDATE pending_writes SET executed_at = $3, result = $4, change_request_id = $2,
         key_id = NULL, nonce = NULL, ciphertext = NULL, auth_tag = NULL WHERE id = $1`,
      [id, changeRequestId, at, result],
    );
  },
  /** Rows older than any change request can live: their request expired or ended long ago. */
  async purgeBefore(db: Queryable, before: number): Promise<number> {
    return (await db.query("DELETE FROM pending_writes WHERE created_at < $1", [before])).rowCount ?? 0;
  },
  /** Pending values not sealed with `activeKey`, locked, a batch at a time in id order. */
  async staleForUpdate(
    db: Queryable,
    activeKey: string,
    after: string,
    limit: number,
  ): Promise<Array<Pick<PendingWrite, "id" | "name" | "key_id" | "nonce" | "ciphertext" | "auth_tag">>> {
    return (
      await db.query(
        `SELECT id, name, ${SEALED} FROM pending_writes
         WHERE key_id IS NOT NULL AND key_id <> $1 AND id > $2 ORDER BY id LIMIT $3 FOR UPDATE`,
        [activeKey, after, limit],
      )
    ).rows;
  },
  async updateSealed(db: Queryable, id: string, s: Sealed): Promise<void> {
    await db.query("UPDATE pending_writes SET key_id = $2, nonce = $3, ciphertext = $4, auth_tag = $5 WHERE id = $1", [
      id,
      s.keyId,
      s.nonce,
      s.ciphertext,
      s.tag,
    ]);
  },
};
