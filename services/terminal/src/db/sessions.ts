import type { Queryable } from "@orch/kit";

export type SessionStatus = "opening" | "open" | "closed" | "failed";
export const STATUSES: readonly SessionStatus[] = ["opening", "open", "closed", "failed"];
export const isLive = (s: string) => s === "opening" || s === "open";

export interface SessionRow {
  id: string;
  node_id: string;
  node_name: string;
  operator_id: string;
  operator_name: string;
  status: SessionStatus;
  shell: string;
  cols: number;
  rows: number;
  opened_at: number;
  closed_at: number | null;
  exit_code: number | null;
  close_reason: string | null;
  closed_by_id: string | null;
  closed_by_name: string | null;
  transcript_file: string;
  sha256: string | null;
  owner: string | null;
  lease_expires_at: number;
}

const COLS =
  "id, node_id, node_name, operator_id, operator_name, status, shell, cols, rows, opened_at, closed_at, exit_code, close_reason, closed_by_id, closed_by_name, transcript_file, sha256, owner, lease_expires_at";
const LIVE = "status IN ('opening', 'open')";

export interface Finalisation {
  status: "closed" | "failed";
  closedAt: number;
  exitCode: number | null;
  reason: string;
  sha256: string;
}

export const sessionsDb = {
  async insert(
    db: Queryable,
    r: Pick<
      SessionRow,
      | "id"
      | "node_id"
      | "node_name"
      | "operator_id"
      | "operator_name"
      | "shell"
      | "cols"
      | "rows"
      | "opened_at"
      | "transcript_file"
      | "owner"
      | "lease_expires_at"
    >,
  ): Promise<void> {
    await db.query(
      `INSERT INTO sessions (id, node_id, node_name, operator_id, operator_name, status, shell, cols, rows, opened_at, transcript_file, owner, lease_expires_at)
       VALUES ($1, $2, $3, $4, $5, 'opening', $6, $7, $8, $9, $10, $11, $12)`,
      [
        r.id,
        r.node_id,
        r.node_name,
        r.operator_id,
        r.operator_name,
        r.shell,
        r.cols,
        r.rows,
        r.opened_at,
        r.transcript_file,
        r.owner,
        r.lease_expires_at,
      ],
    );
  },
  async get(db: Queryable, id: string): Promise<SessionRow | undefined> {
    return (await db.query<SessionRow>(`SELECT ${COLS} FROM sessions WHERE id = $1`, [id])).rows[0];
  },
  async remove(db: Queryable, id: string): Promise<void> {
    await db.query("DELETE FROM sessions WHERE id = $1", [id]);
  },
  /** Newest first; `operatorId` null = every operator's sessions. */
  async page(
    db: Queryable,
    f: { status: string; operatorId: string | null; before: string; limit: number },
  ): Promise<SessionRow[]> {
    return (
      await db.query<SessionRow>(
        `SELECT ${COLS} FROM sessions
          WHERE ($1 = '' OR status = $1) AND ($2::text IS NULL OR operator_id = $2) AND ($3 = '' OR id < $3)
          ORDER BY id DESC LIMIT $4`,
        [f.status, f.operatorId, f.before, f.limit],
      )
    ).rows;
  },
  async markOpen(db: Queryable, id: string, shell: string): Promise<SessionRow | undefined> {
    return (
      await db.query<SessionRow>(
        `UPDATE sessions SET status = 'open', shell = $2 WHERE id = $1 AND status = 'opening' RETURNING ${COLS}`,
        [id, shell],
      )
    ).rows[0];
  },
  /** Records who asked for a close; the recording replica reads it when it finalises. */
  async requestClose(db: Queryable, id: string, by: { id: string; name: string }): Promise<void> {
    await db.query(
      `UPDATE sessions SET close_reason = COALESCE(close_reason, 'closed_by_operator'), closed_by_id = $2, closed_by_name = $3 WHERE id = $1 AND ${LIVE}`,
      [id, by.id, by.name],
    );
  },
  /** Ends a live session this replica owns; undefined when it is not (or no longer) ours. */
  async finalise(db: Queryable, id: string, owner: string, f: Finalisation): Promise<SessionRow | undefined> {
    return (
      await db.query<SessionRow>(
        `UPDATE sessions SET status = $3, closed_at = $4, exit_code = $5, close_reason = COALESCE(close_reason, $6), sha256 = $7, owner = NULL, lease_expires_at = 0
          WHERE id = $1 AND owner = $2 AND ${LIVE} RETURNING ${COLS}`,
        [id, owner, f.status, f.closedAt, f.exitCode, f.reason, f.sha256],
      )
    ).rows[0];
  },
  /** Live sessions whose recorder's lease has lapsed. */
  async abandoned(db: Queryable, now: number, limit: number): Promise<SessionRow[]> {
    return (
      await db.query<SessionRow>(
        `SELECT ${COLS} FROM sessions WHERE ${LIVE} AND lease_expires_at < $1 ORDER BY id LIMIT $2`,
        [now, limit],
      )
    ).rows;
  },
  /** Takes over an abandoned session; atomic, so exactly one replica wins. */
  async claim(db: Queryable, id: string, owner: string, now: number, until: number): Promise<SessionRow | undefined> {
    return (
      await db.query<SessionRow>(
        `UPDATE sessions SET owner = $2, lease_expires_at = $4 WHERE id = $1 AND ${LIVE} AND lease_expires_at < $3 RETURNING ${COLS}`,
        [id, owner, now, until],
      )
    ).rows[0];
  },
  /** Extends this replica's leases; returns the ids it still holds. */
  async refreshLeases(db: Queryable, owner: string, until: number): Promise<string[]> {
    return (
      await db.query<{ id: string }>(
        `UPDATE sessions SET lease_expires_at = $2 WHERE owner = $1 AND ${LIVE} RETURNING id`,
        [owner, until],
      )
    ).rows.map((r) => r.id);
  },
  /** Gives sessions up at a clean stop so another replica takes them over at once. */
  async releaseLeases(db: Queryable, owner: string): Promise<void> {
    await db.query(`UPDATE sessions SET owner = NULL, lease_expires_at = 0 WHERE owner = $1 AND ${LIVE}`, [owner]);
  },
};
