import type { Queryable } from "@orch/kit";

export interface RetentionOverride {
  /** null = an override that turns pruning off. */
  retention_days: number | null;
  updated_at: number;
  updated_by: string;
}

export const retentionDb = {
  async get(db: Queryable): Promise<RetentionOverride | undefined> {
    return (await db.query<RetentionOverride>("SELECT retention_days, updated_at, updated_by FROM retention")).rows[0];
  },
  /** Serialises concurrent changes of the setting (the row may not exist yet). */
  async lock(db: Queryable): Promise<void> {
    await db.query("LOCK TABLE retention IN SHARE ROW EXCLUSIVE MODE");
  },
  async set(db: Queryable, days: number | null, at: number, by: string): Promise<void> {
    await db.query(
      `INSERT INTO retention (singleton, retention_days, updated_at, updated_by) VALUES (true, $1, $2, $3)
       ON CONFLICT (singleton) DO UPDATE SET retention_days = EXCLUDED.retention_days, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by`,
      [days, at, by],
    );
  },
  async clear(db: Queryable): Promise<void> {
    await db.query("DELETE FROM retention");
  },
};
