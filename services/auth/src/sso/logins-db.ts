import type { Queryable } from "@orch/kit";

export interface PendingLogin {
  state_hash: string;
  provider_id: string;
  nonce: string;
  code_verifier: string;
  redirect_uri: string;
  client: "console" | "cli";
  return_to: string;
  expires_at: number;
}

export interface PendingDevice {
  id: string;
  provider_id: string;
  device_code: string;
  interval_seconds: number;
  expires_at: number;
}

export const loginsDb = {
  async add(db: Queryable, l: PendingLogin): Promise<void> {
    await db.query(
      `INSERT INTO sso_logins (state_hash, provider_id, nonce, code_verifier, redirect_uri, client, return_to, expires_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
      [l.state_hash, l.provider_id, l.nonce, l.code_verifier, l.redirect_uri, l.client, l.return_to, l.expires_at],
    );
  },
  /** Consumes the pending sign-in: a state works once, whatever the outcome. */
  async take(db: Queryable, stateHash: string): Promise<PendingLogin | undefined> {
    return (
      await db.query<PendingLogin>(
        `DELETE FROM sso_logins WHERE state_hash = $1
         RETURNING state_hash, provider_id, nonce, code_verifier, redirect_uri, client, return_to, expires_at`,
        [stateHash],
      )
    ).rows[0];
  },
  async addDevice(db: Queryable, d: PendingDevice): Promise<void> {
    await db.query(
      "INSERT INTO sso_devices (id, provider_id, device_code, interval_seconds, expires_at) VALUES ($1, $2, $3, $4, $5)",
      [d.id, d.provider_id, d.device_code, d.interval_seconds, d.expires_at],
    );
  },
  async device(db: Queryable, id: string): Promise<PendingDevice | undefined> {
    const sql = "SELECT id, provider_id, device_code, interval_seconds, expires_at FROM sso_devices WHERE id = $1";
    return (await db.query<PendingDevice>(sql, [id])).rows[0];
  },
  async setDeviceInterval(db: Queryable, id: string, interval: number): Promise<void> {
    await db.query("UPDATE sso_devices SET interval_seconds = $2 WHERE id = $1", [id, interval]);
  },
  async removeDevice(db: Queryable, id: string): Promise<boolean> {
    return ((await db.query("DELETE FROM sso_devices WHERE id = $1", [id])).rowCount ?? 0) > 0;
  },
  async purgeExpired(db: Queryable, now: number): Promise<void> {
    await db.query("DELETE FROM sso_logins WHERE expires_at < $1", [now]);
    await db.query("DELETE FROM sso_devices WHERE expires_at < $1", [now]);
  },
};
