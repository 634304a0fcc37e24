import type { Queryable } from "@orch/kit";

export type UpgradeStatus = "requested" | "succeeded" | "failed";

export interface UpgradeRow {
  id: string;
  node_id: string;
  /** The agent's name (joined from agents; "" while unnamed). */
  name: string;
  from_version: string;
  to_version: string;
  status: UpgradeStatus;
  reason: string;
  message: string;
  requested_at: number;
  deadline_at: number;
  finished_at: number | null;
  requested_by: string;
}

const COLS = `u.id, u.node_id, coalesce(a.name, '') AS name, u.from_version, u.to_version, u.status, u.reason,
  u.message, u.requested_at::float8 AS requested_at, u.deadline_at::float8 AS deadline_at,
  u.finished_at::float8 AS finished_at, u.requested_by`;
const FROM = "agent_upgrades u JOIN agents a ON a.node_id = u.node_id";

export const upgradesDb = {
  async insert(
    db: Queryable,
    r: Pick<
      UpgradeRow,
      "id" | "node_id" | "from_version" | "to_version" | "requested_at" | "deadline_at" | "requested_by"
    >,
  ): Promise<UpgradeRow> {
    await db.query(
      `INSERT INTO agent_upgrades (id, node_id, from_version, to_version, requested_at, deadline_at, requested_by)
       VALUES ($1, $2, $3, $4, $5, $6, $7)`,
      [r.id, r.node_id, r.from_version, r.to_version, r.requested_at, r.deadline_at, r.requested_by],
    );
    return (await upgradesDb.byId(db, r.id))!;
  },

  async byId(db: Queryable, id: string): Promise<UpgradeRow | undefined> {
    return (await db.query<UpgradeRow>(`SELECT ${COLS} FROM ${FROM} WHERE u.id = $1`, [id])).rows[0];
  },

  async byIds(db: Queryable, ids: string[]): Promise<UpgradeRow[]> {
    return (await db.query<UpgradeRow>(`SELECT ${COLS} FROM ${FROM} WHERE u.id = ANY($1) ORDER BY u.id`, [ids])).rows;
  },

  /** Ends a still-requested upgrade; undefined when it already ended (someone else got there first). */
  async finish(
    db: Queryable,
    id: string,
    end: { status: "succeeded" | "failed"; reason: string; message: string; at: number },
  ): Promise<UpgradeRow | undefined> {
    const r = await db.query(
      `UPDATE agent_upgrades SET status = $2, reason = $3, message = $4, finished_at = $5
       WHERE id = $1 AND status = 'requested'`,
      [id, end.status, end.reason, end.message, end.at],
    );
    return r.rowCount ? upgradesDb.byId(db, id) : undefined;
  },

  /** An agent's open upgrades, locked, so completion and the deadline job never both end one. */
  async openFor(db: Queryable, nodeId: string): Promise<UpgradeRow[]> {
    return (
      await db.query<UpgradeRow>(
        `SELECT ${COLS} FROM ${FROM} WHERE u.node_id = $1 AND u.status = 'requested' ORDER BY u.id FOR UPDATE OF u`,
        [nodeId],
      )
    ).rows;
  },

  /** Open upgrades past their deadline, oldest first, locked (skipping rows another replica holds). */
  async overdue(db: Queryable, now: number, limit: number): Promise<UpgradeRow[]> {
    return (
      await db.query<UpgradeRow>(
        `SELECT ${COLS} FROM ${FROM} WHERE u.status = 'requested' AND u.deadline_at < $1
         ORDER BY u.deadline_at LIMIT $2 FOR UPDATE OF u SKIP LOCKED`,
        [now, limit],
      )
    ).rows;
  },

  /** Newest first (ULID ids order by creation); `before` is the previous page's last id. */
  async page(db: Queryable, opts: { limit: number; before: string; nodeId: string }): Promise<UpgradeRow[]> {
    return (
      await db.query<UpgradeRow>(
        `SELECT ${COLS} FROM ${FROM} WHERE ($1 = '' OR u.id < $1) AND ($2 = '' OR u.node_id = $2)
         ORDER BY u.id DESC LIMIT $3`,
        [opts.before, opts.nodeId, opts.limit],
      )
    ).rows;
  },
};
