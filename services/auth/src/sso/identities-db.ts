import type { Queryable } from "@orch/kit";

export interface IdentityRow {
  operator_id: string;
  provider_id: string;
  subject: string;
  email: string | null;
  groups: string[];
  rule_index: number;
  rule_name: string;
  /** Sealed with the SSO keyring, the operator id as associated data. */
  refresh_token: Buffer | null;
  sid: string | null;
  provisioned_at: number;
  last_login_at: number;
  checked_at: number;
  unreachable_since: number | null;
}

/** An identity the refresher has to check, with what it needs of its operator. */
export interface DueIdentity extends IdentityRow {
  operator_name: string;
  role: "admin" | "operator";
  agent_selector: string | null;
}

const COLS =
  "operator_id, provider_id, subject, email, groups, rule_index, rule_name, refresh_token, sid, provisioned_at, last_login_at, checked_at, unreachable_since";

export const identitiesDb = {
  async bySubject(db: Queryable, providerId: string, subject: string): Promise<IdentityRow | undefined> {
    const sql = `SELECT ${COLS} FROM sso_identities WHERE provider_id = $1 AND subject = $2 FOR UPDATE`;
    return (await db.query<IdentityRow>(sql, [providerId, subject])).rows[0];
  },
  async bySid(db: Queryable, providerId: string, sid: string): Promise<IdentityRow[]> {
    const sql = `SELECT ${COLS} FROM sso_identities WHERE provider_id = $1 AND sid = $2`;
    return (await db.query<IdentityRow>(sql, [providerId, sid])).rows;
  },
  async operatorIdsOf(db: Queryable, providerId: string): Promise<string[]> {
    const r = await db.query<{ operator_id: string }>("SELECT operator_id FROM sso_identities WHERE provider_id = $1", [
      providerId,
    ]);
    return r.rows.map((x) => x.operator_id);
  },
  async upsert(db: Queryable, i: IdentityRow): Promise<void> {
    await db.query(
      `INSERT INTO sso_identities (${COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
       ON CONFLICT (operator_id) DO UPDATE SET email = EXCLUDED.email, groups = EXCLUDED.groups,
         rule_index = EXCLUDED.rule_index, rule_name = EXCLUDED.rule_name,
         refresh_token = COALESCE(EXCLUDED.refresh_token, sso_identities.refresh_token), sid = EXCLUDED.sid,
         last_login_at = EXCLUDED.last_login_at, checked_at = EXCLUDED.checked_at, unreachable_since = NULL`,
      [
        i.operator_id,
        i.provider_id,
        i.subject,
        i.email,
        i.groups,
        i.rule_index,
        i.rule_name,
        i.refresh_token,
        i.sid,
        i.provisioned_at,
        i.last_login_at,
        i.checked_at,
        i.unreachable_since,
      ],
    );
  },
  /**
   * The next identity due a check, locked for this transaction; SKIP LOCKED lets replicas share the
   * work. Only active operators with a live session are checked: nothing else can be revoked.
   */
  async nextDue(
    db: Queryable,
    now: number,
    defaultIntervalS: number,
    retryMs: number,
  ): Promise<DueIdentity | undefined> {
    const sql = `SELECT ${COLS.split(", ")
      .map((c) => `i.${c}`)
      .join(", ")}, o.name AS operator_name, o.role, o.agent_selector
      FROM sso_identities i
      JOIN operators o ON o.id = i.operator_id
      JOIN identity_providers p ON p.id = i.provider_id
     WHERE o.active
       AND EXISTS (SELECT 1 FROM tokens t WHERE t.operator_id = i.operator_id AND t.expires_at > $1)
       AND i.checked_at <= $1 - 1000 * (CASE WHEN p.refresh_interval_seconds > 0 THEN p.refresh_interval_seconds ELSE $2 END)
       AND (i.attempted_at IS NULL OR i.attempted_at <= $1 - LEAST($3::bigint,
             1000 * (CASE WHEN p.refresh_interval_seconds > 0 THEN p.refresh_interval_seconds ELSE $2 END)))
     ORDER BY i.checked_at
     LIMIT 1
     FOR UPDATE OF i SKIP LOCKED`;
    return (await db.query<DueIdentity>(sql, [now, defaultIntervalS, retryMs])).rows[0];
  },
  async checked(
    db: Queryable,
    operatorId: string,
    c: {
      at: number;
      refreshToken: Buffer | null;
      groups: string[];
      email: string | null;
      ruleIndex: number;
      ruleName: string;
    },
  ): Promise<void> {
    await db.query(
      `UPDATE sso_identities SET checked_at = $2, refresh_token = COALESCE($3, refresh_token), groups = $4,
         email = $5, rule_index = $6, rule_name = $7, unreachable_since = NULL
       WHERE operator_id = $1`,
      [operatorId, c.at, c.refreshToken, c.groups, c.email, c.ruleIndex, c.ruleName],
    );
  },
  async unreachable(db: Queryable, operatorId: string, since: number): Promise<void> {
    await db.query("UPDATE sso_identities SET unreachable_since = $2 WHERE operator_id = $1", [operatorId, since]);
  },
  async attempted(db: Queryable, operatorId: string, at: number): Promise<void> {
    await db.query("UPDATE sso_identities SET attempted_at = $2 WHERE operator_id = $1", [operatorId, at]);
  },
  async dropRefreshToken(db: Queryable, operatorId: string): Promise<void> {
    await db.query("UPDATE sso_identities SET refresh_token = NULL WHERE operator_id = $1", [operatorId]);
  },
};
