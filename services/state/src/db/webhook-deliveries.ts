import type { Queryable } from "@orch/kit";

/** Accepted forge webhook deliveries (migration 0008): what makes a replayed one a duplicate. */
export const webhookDeliveriesDb = {
  /**
   * Records a verified delivery under its keys; true when none of them was there (a new delivery),
   * false when any was (a duplicate). One statement: of two replicas handed the same delivery at
   * once, the primary key lets exactly one insert it.
   */
  async record(db: Queryable, source: string, keys: readonly string[], now: number): Promise<boolean> {
    const r = await db.query<{ key: string }>(
      `INSERT INTO webhook_deliveries (source, key, received_at)
       SELECT $1, k, $3 FROM unnest($2::text[]) AS k
       ON CONFLICT (source, key) DO NOTHING RETURNING key`,
      [source, keys, now],
    );
    return r.rows.length === keys.length;
  },
  /** Forgets deliveries received before `before`: a replay after that is accepted again. */
  async prune(db: Queryable, before: number): Promise<number> {
    return (await db.query("DELETE FROM webhook_deliveries WHERE received_at < $1", [before])).rowCount ?? 0;
  },
};
