import type { Queryable } from "@orch/kit";
import type { CatalogKind, CatalogOp } from "../approvals/catalog-content.js";

/** A catalog write held for approval (migrations/0018_pending_catalog_writes.sql). */
export interface PendingCatalogWrite {
  id: string;
  change_request_id: string | null;
  kind: CatalogKind;
  op: CatalogOp;
  name: string;
  body: Record<string, unknown>;
  base_hash: string | null;
  created_at: number;
  executed_at: number | null;
  result: string | null;
}

const COLS = "id, change_request_id, kind, op, name, body, base_hash, created_at, executed_at, result";

export const pendingCatalogDb = {
  async insert(
    db: Queryable,
    p: Omit<PendingCatalogWrite, "change_request_id" | "executed_at" | "result">,
  ): Promise<void> {
    await db.query(
      `INSERT INTO pending_catalog_writes (id, kind, op, name, body, base_hash, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [p.id, p.kind, p.op, p.name, JSON.stringify(p.body), p.base_hash, p.created_at],
    );
  },
  async get(db: Queryable, id: string): Promise<PendingCatalogWrite | undefined> {
    const r = await db.query<PendingCatalogWrite>(`SELECT ${COLS} FROM pending_catalog_writes WHERE id = $1`, [id]);
    return r.rows[0];
  },
  /** Locks the row until the caller's transaction ends: two executions of one request run one after the other. */
  async lock(db: Queryable, id: string): Promise<PendingCatalogWrite | undefined> {
    const r = await db.query<PendingCatalogWrite>(
      `SELECT ${COLS} FROM pending_catalog_writes WHERE id = $1 FOR UPDATE`,
      [id],
    );
    return r.rows[0];
  },
  async bindRequest(db: Queryable, id: string, changeRequestId: string): Promise<void> {
    await db.query(`UPDATE pending_catalog_writes SET change_request_id = $2 WHERE id = $1`, [id, changeRequestId]);
  },
  async markExecuted(db: Queryable, id: string, changeRequestId: string, at: number, result: string): Promise<void> {
    await db.query(
      `UPDATE pending_catalog_writes SET change_request_id = $2, executed_at = $3, result = $4 WHERE id = $1`,
      [id, changeRequestId, at, result],
    );
  },
  async remove(db: Queryable, id: string): Promise<void> {
    await db.query(`DELETE FROM pending_catalog_writes WHERE id = $1`, [id]);
  },
};
