import type { Queryable } from "@orch/kit";

export interface TicketRow {
  session_id: string;
  operator_id: string;
  operator_name: string;
  expires_at: number;
  /** The bearer token the ticket was obtained with (migration 0002): "" and 0 when not known. */
  token_hash: string;
  token_expires_at: number;
}

const TICKET_COLS = "session_id, operator_id, operator_name, expires_at, token_hash, token_expires_at";

export const ticketsDb = {
  async add(db: Queryable, hash: string, t: TicketRow): Promise<void> {
    const values = [hash, t.session_id, t.operator_id, t.operator_name, t.expires_at, t.token_hash, t.token_expires_at];
    await db.query(`INSERT INTO tickets (hash, ${TICKET_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7)`, values);
  },
  /** Consumes the ticket whatever happens next: it can be presented once. */
  async take(db: Queryable, hash: string): Promise<TicketRow | undefined> {
    return (await db.query<TicketRow>(`DELETE FROM tickets WHERE hash = $1 RETURNING ${TICKET_COLS}`, [hash])).rows[0];
  },
  async purgeExpired(db: Queryable, now: number): Promise<void> {
    await db.query("DELETE FROM tickets WHERE expires_at < $1", [now]);
  },
};
