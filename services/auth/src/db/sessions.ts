import type { Queryable } from "@orch/kit";
import { ssoOriginCols, type OperatorRow } from "./operators.js";

/** How a console session was opened (the `tokens.via` column). */
export type ConsoleVia = "login_code" | "passkey" | "sso";

export const sessionsDb = {
  async addChallenge(db: Queryable, nonce: string, publicKey: string, expiresAt: number): Promise<void> {
    await db.query("INSERT INTO challenges (nonce, public_key, expires_at) VALUES ($1, $2, $3)", [
      nonce,
      publicKey,
      expiresAt,
    ]);
  },
  /** Consumes the nonce: it can be used once, whatever the outcome. */
  async takeChallenge(db: Queryable, nonce: string): Promise<{ public_key: string; expires_at: number } | undefined> {
    return (
      await db.query<{ public_key: string; expires_at: number }>(
        "DELETE FROM challenges WHERE nonce = $1 RETURNING public_key, expires_at",
        [nonce],
      )
    ).rows[0];
  },
  async addToken(
    db: Queryable,
    hash: string,
    operatorId: string,
    createdAt: number,
    expiresAt: number,
    via: "key" | "sso" = "key",
  ): Promise<void> {
    await db.query("INSERT INTO tokens (hash, operator_id, created_at, expires_at, via) VALUES ($1, $2, $3, $4, $5)", [
      hash,
      operatorId,
      createdAt,
      expiresAt,
      via,
    ]);
  },
  /** Ends every session of the operator; returns how many there were. */
  async removeOperatorTokens(db: Queryable, operatorId: string): Promise<number> {
    return (await db.query("DELETE FROM tokens WHERE operator_id = $1", [operatorId])).rowCount ?? 0;
  },
  /** A web console session: a token like any other, marked with how it was opened. */
  async addConsoleToken(
    db: Queryable,
    t: { hash: string; operatorId: string; createdAt: number; expiresAt: number; via: ConsoleVia; passkeyId?: string },
  ): Promise<void> {
    await db.query(
      `INSERT INTO tokens (hash, operator_id, created_at, expires_at, kind, via, passkey_id)
       VALUES ($1, $2, $3, $4, 'console', $5, $6)`,
      [t.hash, t.operatorId, t.createdAt, t.expiresAt, t.via, t.passkeyId ?? null],
    );
  },
  async principal(
    db: Queryable,
    hash: string,
    now: number,
  ): Promise<(OperatorRow & { expires_at: number }) | undefined> {
    return (
      await db.query<OperatorRow & { expires_at: number }>({
        name: "auth.principal",
        text: `SELECT o.id, o.name, o.public_key, o.role, o.active, o.created_at, o.created_by, o.agent_selector, t.expires_at,
                ${ssoOriginCols("o")}
           FROM tokens t JOIN operators o ON o.id = t.operator_id
          WHERE t.hash = $1 AND t.expires_at > $2 AND o.active`,
        values: [hash, now],
      })
    ).rows[0];
  },
  async removeToken(db: Queryable, hash: string): Promise<void> {
    await db.query("DELETE FROM tokens WHERE hash = $1", [hash]);
  },
  async purgeExpired(db: Queryable, now: number): Promise<void> {
    await db.query("DELETE FROM challenges WHERE expires_at < $1", [now]);
    await db.query("DELETE FROM tokens WHERE expires_at < $1", [now]);
    await db.query("DELETE FROM login_codes WHERE expires_at < $1", [now]);
    await db.query("DELETE FROM webauthn_challenges WHERE expires_at < $1", [now]);
  },
};
