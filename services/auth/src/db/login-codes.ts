import type { Queryable } from "@orch/kit";

export const loginCodesDb = {
  async add(db: Queryable, hash: string, operatorId: string, createdAt: number, expiresAt: number): Promise<void> {
    await db.query("INSERT INTO login_codes (hash, operator_id, created_at, expires_at) VALUES ($1, $2, $3, $4)", [
      hash,
      operatorId,
      createdAt,
      expiresAt,
    ]);
  },
  /** Consumes the code: it can be used once, whatever the outcome. */
  async take(db: Queryable, hash: string): Promise<{ operator_id: string; expires_at: number } | undefined> {
    return (
      await db.query<{ operator_id: string; expires_at: number }>(
        "DELETE FROM login_codes WHERE hash = $1 RETURNING operator_id, expires_at",
        [hash],
      )
    ).rows[0];
  },
};
