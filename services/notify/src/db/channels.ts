import type { Queryable } from "@orch/kit";
import type { ChannelType } from "../channels/config.js";

export interface ChannelRow {
  id: string;
  name: string;
  channel_type: ChannelType;
  config: Record<string, unknown>;
  credentials: Buffer;
  enabled: boolean;
  disabled_reason: string;
  created_at: number;
  created_by: string;
  updated_at: number;
}

const COLS =
  "id, name, channel_type, config, credentials, enabled, disabled_reason, created_at, created_by, updated_at";

export const channelsDb = {
  async byIdOrName(db: Queryable, ref: string, forUpdate = false): Promise<ChannelRow | undefined> {
    return (
      await db.query<ChannelRow>(
        `SELECT ${COLS} FROM channels WHERE id = $1 OR name = $1 ORDER BY id = $1 DESC LIMIT 1${forUpdate ? " FOR UPDATE" : ""}`,
        [ref],
      )
    ).rows[0];
  },
  async page(db: Queryable, limit: number, after: string): Promise<ChannelRow[]> {
    return (
      await db.query<ChannelRow>(`SELECT ${COLS} FROM channels WHERE id > $1 ORDER BY id LIMIT $2`, [after, limit])
    ).rows;
  },
  async enabled(db: Queryable): Promise<ChannelRow[]> {
    return (await db.query<ChannelRow>(`SELECT ${COLS} FROM channels WHERE enabled ORDER BY id`)).rows;
  },
  async insert(db: Queryable, r: ChannelRow): Promise<void> {
    await db.query(`INSERT INTO channels (${COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`, [
      r.id,
      r.name,
      r.channel_type,
      JSON.stringify(r.config),
      r.credentials,
      r.enabled,
      r.disabled_reason,
      r.created_at,
      r.created_by,
      r.updated_at,
    ]);
  },
  async update(db: Queryable, r: ChannelRow): Promise<void> {
    await db.query(
      "UPDATE channels SET name = $2, config = $3, credentials = $4, enabled = $5, disabled_reason = $6, updated_at = $7 WHERE id = $1",
      [r.id, r.name, JSON.stringify(r.config), r.credentials, r.enabled, r.disabled_reason, r.updated_at],
    );
  },
  /** Disables a channel unless it already is; returns whether this call changed it. */
  async disable(db: Queryable, id: string, reason: string, now: number): Promise<boolean> {
    const r = await db.query(
      "UPDATE channels SET enabled = false, disabled_reason = $2, updated_at = $3 WHERE id = $1 AND enabled",
      [id, reason, now],
    );
    return (r.rowCount ?? 0) > 0;
  },
  async remove(db: Queryable, id: string): Promise<void> {
    await db.query("DELETE FROM channels WHERE id = $1", [id]);
  },
};
