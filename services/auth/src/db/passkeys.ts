import type { Queryable } from "@orch/kit";

export interface PasskeyRow {
  id: string;
  operator_id: string;
  /** base64url, as the browser reports it. */
  credential_id: string;
  /** COSE public key. */
  public_key: Buffer;
  counter: number;
  transports: string[];
  device_type: string;
  backed_up: boolean;
  name: string;
  created_at: number;
  last_used_at: number | null;
}

export type ChallengePurpose = "register" | "login";

const COLS =
  "id, operator_id, credential_id, public_key, counter, transports, device_type, backed_up, name, created_at, last_used_at";

export const passkeysDb = {
  async ofOperator(db: Queryable, operatorId: string): Promise<PasskeyRow[]> {
    const sql = `SELECT ${COLS} FROM passkeys WHERE operator_id = $1 ORDER BY created_at, id`;
    return (await db.query<PasskeyRow>(sql, [operatorId])).rows;
  },
  async byCredentialId(db: Queryable, credentialId: string): Promise<PasskeyRow | undefined> {
    return (await db.query<PasskeyRow>(`SELECT ${COLS} FROM passkeys WHERE credential_id = $1`, [credentialId]))
      .rows[0];
  },
  async insert(db: Queryable, p: PasskeyRow): Promise<void> {
    await db.query(`INSERT INTO passkeys (${COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`, [
      p.id,
      p.operator_id,
      p.credential_id,
      p.public_key,
      p.counter,
      p.transports,
      p.device_type,
      p.backed_up,
      p.name,
      p.created_at,
      p.last_used_at,
    ]);
  },
  /** Records a sign-in; false when the passkey no longer exists. Locks the row until the caller commits. */
  async markUsed(db: Queryable, id: string, counter: number, backedUp: boolean, at: number): Promise<boolean> {
    const r = await db.query(
      "UPDATE passkeys SET counter = $2, backed_up = $3, last_used_at = $4 WHERE id = $1 RETURNING 1",
      [id, counter, backedUp, at],
    );
    return (r.rowCount ?? 0) > 0;
  },
  /**
   * Removes an operator's passkey with the console sessions it opened; returns the removed row and
   * those sessions' token hashes (for the revocation broadcast), or undefined when the operator has
   * no such passkey.
   */
  async remove(
    db: Queryable,
    operatorId: string,
    id: string,
  ): Promise<{ row: PasskeyRow; tokenHashes: string[] } | undefined> {
    // Lock first so a sign-in with this passkey cannot add a token between the select and the delete.
    const found = (
      await db.query<PasskeyRow>(`SELECT ${COLS} FROM passkeys WHERE id = $1 AND operator_id = $2 FOR UPDATE`, [
        id,
        operatorId,
      ])
    ).rows[0];
    if (!found) return undefined;
    const tokens = await db.query<{ hash: string }>("DELETE FROM tokens WHERE passkey_id = $1 RETURNING hash", [id]);
    await db.query("DELETE FROM passkeys WHERE id = $1", [id]);
    return { row: found, tokenHashes: tokens.rows.map((t) => t.hash) };
  },

  async addChallenge(
    db: Queryable,
    challenge: string,
    purpose: ChallengePurpose,
    operatorId: string | null,
    expiresAt: number,
  ): Promise<void> {
    await db.query(
      "INSERT INTO webauthn_challenges (challenge, operator_id, purpose, expires_at) VALUES ($1, $2, $3, $4)",
      [challenge, operatorId, purpose, expiresAt],
    );
  },
  /** Consumes the challenge: it can be used once, whatever the outcome (even for the wrong purpose). */
  async takeChallenge(
    db: Queryable,
    challenge: string,
  ): Promise<{ operator_id: string | null; purpose: ChallengePurpose; expires_at: number } | undefined> {
    return (
      await db.query<{ operator_id: string | null; purpose: ChallengePurpose; expires_at: number }>(
        "DELETE FROM webauthn_challenges WHERE challenge = $1 RETURNING operator_id, purpose, expires_at",
        [challenge],
      )
    ).rows[0];
  },
};
