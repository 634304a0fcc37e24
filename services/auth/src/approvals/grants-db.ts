import type { Queryable } from "@orch/kit";

export interface GrantRow {
  id: string;
  operator_id: string;
  operator_name: string;
  request_id: string;
  agent_selector: string;
  role: "" | "admin";
  reason: string;
  granted_at: number;
  expires_at: number;
  ended_at: number | null;
  end_reason: "" | "expired" | "revoked";
  ended_by: string;
}

const COLS =
  "id, operator_id, operator_name, request_id, agent_selector, role, reason, granted_at::float8 AS granted_at, expires_at::float8 AS expires_at, ended_at::float8 AS ended_at, end_reason, ended_by";

export const grantsDb = {
  async insert(db: Queryable, g: GrantRow): Promise<void> {
    await db.query(
      `INSERT INTO access_grants (id, operator_id, operator_name, request_id, agent_selector, role, reason, granted_at, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [
        g.id,
        g.operator_id,
        g.operator_name,
        g.request_id,
        g.agent_selector,
        g.role,
        g.reason,
        g.granted_at,
        g.expires_at,
      ],
    );
  },
  async byId(db: Queryable, id: string, lock = false): Promise<GrantRow | undefined> {
    const q = `SELECT ${COLS} FROM access_grants WHERE id = $1${lock ? " FOR UPDATE" : ""}`;
    return (await db.query<GrantRow>(q, [id])).rows[0];
  },
  /** The operator's grants in force at `now` (an expired one counts as ended even before the job ends it). */
  async activeFor(db: Queryable, operatorId: string, now: number): Promise<GrantRow[]> {
    const q = `SELECT ${COLS} FROM access_grants WHERE operator_id = $1 AND ended_at IS NULL AND expires_at > $2 ORDER BY id`;
    return (await db.query<GrantRow>(q, [operatorId, now])).rows;
  },
  /** Grants in force at `now` of several operators, by operator id. */
  async activeForMany(db: Queryable, operatorIds: readonly string[], now: number): Promise<Map<string, GrantRow[]>> {
    const q = `SELECT ${COLS} FROM access_grants WHERE operator_id = ANY($1) AND ended_at IS NULL AND expires_at > $2 ORDER BY id`;
    const by = new Map<string, GrantRow[]>();
    for (const g of (await db.query<GrantRow>(q, [operatorIds, now])).rows)
      by.set(g.operator_id, [...(by.get(g.operator_id) ?? []), g]);
    return by;
  },
  async page(
    db: Queryable,
    f: { operatorId: string; active: boolean; now: number },
    limit: number,
    before: string,
  ): Promise<GrantRow[]> {
    const q = `SELECT ${COLS} FROM access_grants
      WHERE ($1 = '' OR operator_id = $1) AND (NOT $2 OR (ended_at IS NULL AND expires_at > $3))
        AND ($4 = '' OR id < $4)
      ORDER BY id DESC LIMIT $5`;
    return (await db.query<GrantRow>(q, [f.operatorId, f.active, f.now, before, limit])).rows;
  },
  /** Grants past their expiry not yet ended, locked (replicas share the work). */
  async due(db: Queryable, now: number, limit = 100): Promise<GrantRow[]> {
    const q = `SELECT ${COLS} FROM access_grants WHERE ended_at IS NULL AND expires_at <= $1
      ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED`;
    return (await db.query<GrantRow>(q, [now, limit])).rows;
  },
  async end(db: Queryable, id: string, at: number, reason: "expired" | "revoked", by: string): Promise<void> {
    await db.query("UPDATE access_grants SET ended_at = $2, end_reason = $3, ended_by = $4 WHERE id = $1", [
      id,
      at,
      reason,
      by,
    ]);
  },
};
