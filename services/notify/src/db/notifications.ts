import type { Queryable } from "@orch/kit";

export interface NotificationRow {
  id: string;
  operator_id: string;
  event_id: string;
  event_type: string;
  severity: string;
  summary: string;
  timestamp_ms: number;
  read_at: number | null;
}

const COLS = "id, operator_id, event_id, event_type, severity, summary, timestamp_ms, read_at";

export const notificationsDb = {
  /** One operator's notifications, newest first, keyset on id. */
  async page(
    db: Queryable,
    operatorId: string,
    opts: { unreadOnly: boolean; limit: number; before: string },
  ): Promise<NotificationRow[]> {
    const where = ["operator_id = $1"];
    const args: unknown[] = [operatorId];
    if (opts.unreadOnly) where.push("read_at IS NULL");
    if (opts.before) where.push(`id < $${args.push(opts.before)}`);
    return (
      await db.query<NotificationRow>(
        `SELECT ${COLS} FROM notifications WHERE ${where.join(" AND ")} ORDER BY id DESC LIMIT $${args.push(opts.limit)}`,
        args,
      )
    ).rows;
  },
  async unreadCount(db: Queryable, operatorId: string): Promise<number> {
    return Number(
      (
        await db.query<{ n: string }>(
          "SELECT count(*) AS n FROM notifications WHERE operator_id = $1 AND read_at IS NULL",
          [operatorId],
        )
      ).rows[0]?.n ?? 0,
    );
  },
  async byId(db: Queryable, operatorId: string, id: string): Promise<NotificationRow | undefined> {
    return (
      await db.query<NotificationRow>(`SELECT ${COLS} FROM notifications WHERE id = $1 AND operator_id = $2`, [
        id,
        operatorId,
      ])
    ).rows[0];
  },
  /** Marks one read; returns whether it was unread. */
  async markRead(db: Queryable, operatorId: string, id: string, now: number): Promise<boolean> {
    const r = await db.query(
      "UPDATE notifications SET read_at = $3 WHERE id = $1 AND operator_id = $2 AND read_at IS NULL",
      [id, operatorId, now],
    );
    return (r.rowCount ?? 0) > 0;
  },
  async markAllRead(db: Queryable, operatorId: string, now: number): Promise<number> {
    return (
      (
        await db.query("UPDATE notifications SET read_at = $2 WHERE operator_id = $1 AND read_at IS NULL", [
          operatorId,
          now,
        ])
      ).rowCount ?? 0
    );
  },
  async insertMany(db: Queryable, rows: NotificationRow[]): Promise<void> {
    const cols = ["id", "operator_id", "event_id", "event_type", "severity", "summary", "timestamp_ms"] as const;
    // Chunks keep each statement well under Postgres' 65535 bind parameters.
    for (let i = 0; i < rows.length; i += 1000) {
      const values: unknown[] = [];
      const tuples = rows.slice(i, i + 1000).map((r) => `(${cols.map((c) => `$${values.push(r[c])}`).join(", ")})`);
      await db.query(
        `INSERT INTO notifications (${cols.join(", ")}) VALUES ${tuples.join(", ")} ON CONFLICT (operator_id, event_id) DO NOTHING`,
        values,
      );
    }
  },
  async removeOperator(db: Queryable, operatorId: string): Promise<void> {
    await db.query("DELETE FROM notifications WHERE operator_id = $1", [operatorId]);
  },
};
