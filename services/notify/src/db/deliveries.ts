import type { Queryable } from "@orch/kit";

export type DeliveryStatus = "pending" | "in_flight" | "delivered" | "failed" | "suppressed" | "cancelled";
export const DELIVERY_STATUSES: readonly DeliveryStatus[] = [
  "pending",
  "in_flight",
  "delivered",
  "failed",
  "suppressed",
  "cancelled",
];

export interface DeliveryRow {
  id: string;
  channel_id: string;
  event_id: string;
  event_type: string;
  severity: string;
  event: Record<string, unknown>;
  status: DeliveryStatus;
  attempts: number;
  next_attempt_at: number;
  lease_until: number;
  last_status_code: number;
  last_error: string;
  created_at: number;
  delivered_at: number;
}

const COLS =
  "id, channel_id, event_id, event_type, severity, event, status, attempts, next_attempt_at, lease_until, last_status_code, last_error, created_at, delivered_at";

export type NewDelivery = Pick<
  DeliveryRow,
  | "id"
  | "channel_id"
  | "event_id"
  | "event_type"
  | "severity"
  | "event"
  | "status"
  | "next_attempt_at"
  | "created_at"
  | "last_error"
>;

export const deliveriesDb = {
  async insert(db: Queryable, d: NewDelivery): Promise<void> {
    await db.query(
      `INSERT INTO deliveries (id, channel_id, event_id, event_type, severity, event, status, next_attempt_at, created_at, last_error)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (channel_id, event_id) DO NOTHING`,
      [
        d.id,
        d.channel_id,
        d.event_id,
        d.event_type,
        d.severity,
        JSON.stringify(d.event),
        d.status,
        d.next_attempt_at,
        d.created_at,
        d.last_error,
      ],
    );
  },

  /**
   * Claims due deliveries of enabled channels: pending ones whose time has come, and in-flight ones
   * whose lease expired (their worker died). Each claim counts as an attempt and takes a lease.
   * SKIP LOCKED lets every replica's worker claim a disjoint set.
   */
  async claim(db: Queryable, now: number, leaseMs: number, limit: number): Promise<DeliveryRow[]> {
    return (
      await db.query<DeliveryRow>(
        `WITH due AS (
           SELECT d.id FROM deliveries d JOIN channels c ON c.id = d.channel_id AND c.enabled
            WHERE (d.status = 'pending' AND d.next_attempt_at <= $1) OR (d.status = 'in_flight' AND d.lease_until <= $1)
            ORDER BY d.next_attempt_at, d.id
            LIMIT $3
            FOR UPDATE OF d SKIP LOCKED)
         UPDATE deliveries d SET status = 'in_flight', lease_until = $1 + $2, attempts = d.attempts + 1
           FROM due WHERE d.id = due.id
         RETURNING ${COLS.split(", ")
           .map((c) => `d.${c}`)
           .join(", ")}`,
        [now, leaseMs, limit],
      )
    ).rows;
  },

  /** Records success if this worker still holds the claim; returns whether it did. */
  async markDelivered(db: Queryable, id: string, attempt: number, statusCode: number, now: number): Promise<boolean> {
    const r = await db.query(
      "UPDATE deliveries SET status = 'delivered', delivered_at = $4, last_status_code = $3, last_error = '', lease_until = 0 WHERE id = $1 AND status = 'in_flight' AND attempts = $2",
      [id, attempt, statusCode, now],
    );
    return (r.rowCount ?? 0) > 0;
  },

  async markRetry(
    db: Queryable,
    id: string,
    attempt: number,
    statusCode: number,
    error: string,
    nextAt: number,
  ): Promise<boolean> {
    const r = await db.query(
      "UPDATE deliveries SET status = 'pending', next_attempt_at = $5, last_status_code = $3, last_error = $4, lease_until = 0 WHERE id = $1 AND status = 'in_flight' AND attempts = $2",
      [id, attempt, statusCode, error, nextAt],
    );
    return (r.rowCount ?? 0) > 0;
  },

  async markFailed(db: Queryable, id: string, attempt: number, statusCode: number, error: string): Promise<boolean> {
    const r = await db.query(
      "UPDATE deliveries SET status = 'failed', last_status_code = $3, last_error = $4, lease_until = 0 WHERE id = $1 AND status = 'in_flight' AND attempts = $2",
      [id, attempt, statusCode, error],
    );
    return (r.rowCount ?? 0) > 0;
  },

  /** A disabled channel's waiting deliveries will not be sent. */
  async cancelPending(db: Queryable, channelId: string, reason: string): Promise<number> {
    const r = await db.query(
      "UPDATE deliveries SET status = 'cancelled', last_error = $2, lease_until = 0 WHERE channel_id = $1 AND status IN ('pending', 'in_flight')",
      [channelId, reason],
    );
    return r.rowCount ?? 0;
  },

  async page(
    db: Queryable,
    channelId: string,
    opts: { status: string; limit: number; before: string },
  ): Promise<DeliveryRow[]> {
    const where = ["channel_id = $1"];
    const args: unknown[] = [channelId];
    if (opts.status) where.push(`status = $${args.push(opts.status)}`);
    if (opts.before) where.push(`id < $${args.push(opts.before)}`);
    return (
      await db.query<DeliveryRow>(
        `SELECT ${COLS} FROM deliveries WHERE ${where.join(" AND ")} ORDER BY id DESC LIMIT $${args.push(opts.limit)}`,
        args,
      )
    ).rows;
  },

  /** Soonest time a pending delivery of an enabled channel is due, for the worker's sleep. */
  async nextDue(db: Queryable): Promise<number | undefined> {
    const r = await db.query<{ t: number | null }>(
      "SELECT min(LEAST(CASE WHEN d.status = 'pending' THEN d.next_attempt_at END, CASE WHEN d.status = 'in_flight' THEN d.lease_until END)) AS t FROM deliveries d JOIN channels c ON c.id = d.channel_id AND c.enabled WHERE d.status IN ('pending', 'in_flight')",
    );
    const t = r.rows[0]?.t;
    return t === null || t === undefined ? undefined : Number(t);
  },
};
