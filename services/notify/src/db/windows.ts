import type { Queryable } from "@orch/kit";

export interface WindowRow {
  id: string;
  starts_at: number;
  ends_at: number;
  reason: string;
  created_by: string;
  created_at: number;
  updated_at: number;
}

const COLS = "id, starts_at, ends_at, reason, created_by, created_at, updated_at";

export const windowsDb = {
  async byId(db: Queryable, id: string, forUpdate = false): Promise<WindowRow | undefined> {
    return (
      await db.query<WindowRow>(
        `SELECT ${COLS} FROM maintenance_windows WHERE id = $1${forUpdate ? " FOR UPDATE" : ""}`,
        [id],
      )
    ).rows[0];
  },
  async page(db: Queryable, limit: number, after: string): Promise<WindowRow[]> {
    return (
      await db.query<WindowRow>(`SELECT ${COLS} FROM maintenance_windows WHERE id > $1 ORDER BY id LIMIT $2`, [
        after,
        limit,
      ])
    ).rows;
  },
  /** The window covering `at` (ms) that ends last, if any. */
  async activeAt(db: Queryable, at: number): Promise<WindowRow | undefined> {
    return (
      await db.query<WindowRow>(
        `SELECT ${COLS} FROM maintenance_windows WHERE starts_at <= $1 AND ends_at > $1 ORDER BY ends_at DESC LIMIT 1`,
        [at],
      )
    ).rows[0];
  },
  async insert(db: Queryable, w: WindowRow): Promise<void> {
    await db.query(`INSERT INTO maintenance_windows (${COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, [
      w.id,
      w.starts_at,
      w.ends_at,
      w.reason,
      w.created_by,
      w.created_at,
      w.updated_at,
    ]);
  },
  async update(db: Queryable, w: WindowRow): Promise<void> {
    await db.query(
      "UPDATE maintenance_windows SET starts_at = $2, ends_at = $3, reason = $4, updated_at = $5 WHERE id = $1",
      [w.id, w.starts_at, w.ends_at, w.reason, w.updated_at],
    );
  },
  async remove(db: Queryable, id: string): Promise<void> {
    await db.query("DELETE FROM maintenance_windows WHERE id = $1", [id]);
  },
};
