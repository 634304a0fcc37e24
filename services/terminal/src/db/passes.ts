import type { Queryable } from "@orch/kit";

export interface PassRow {
  change_request_id: string;
  node_id: string;
  node_name: string;
  shell: string;
  operator_id: string;
  approvers: string[];
  created_at: number;
  expires_at: number;
  used_at: number | null;
  session_id: string | null;
}

const COLS =
  "change_request_id, node_id, node_name, shell, operator_id, approvers, created_at, expires_at, used_at, session_id";

export const passesDb = {
  /** Records a pass once: a second insert for the same request keeps the first. */
  async insert(db: Queryable, r: Omit<PassRow, "used_at" | "session_id">): Promise<void> {
    await db.query(
      `INSERT INTO passes (change_request_id, node_id, node_name, shell, operator_id, approvers, created_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (change_request_id) DO NOTHING`,
      [r.change_request_id, r.node_id, r.node_name, r.shell, r.operator_id, r.approvers, r.created_at, r.expires_at],
    );
  },
  async get(db: Queryable, id: string): Promise<PassRow | undefined> {
    return (await db.query<PassRow>(`SELECT ${COLS} FROM passes WHERE change_request_id = $1`, [id])).rows[0];
  },
  /** The pass, its row held until the transaction ends (two opens with it decide one after the other). */
  async lock(db: Queryable, id: string): Promise<PassRow | undefined> {
    return (await db.query<PassRow>(`SELECT ${COLS} FROM passes WHERE change_request_id = $1 FOR UPDATE`, [id]))
      .rows[0];
  },
  async markUsed(db: Queryable, id: string, sessionId: string, now: number): Promise<void> {
    await db.query("UPDATE passes SET used_at = $2, session_id = $3 WHERE change_request_id = $1", [
      id,
      now,
      sessionId,
    ]);
  },
  /** The agent refused the PTY: the pass was not really used, so it may be tried again. */
  async release(db: Queryable, id: string, sessionId: string): Promise<void> {
    await db.query(
      "UPDATE passes SET used_at = NULL, session_id = NULL WHERE change_request_id = $1 AND session_id = $2",
      [id, sessionId],
    );
  },
};
