import type { Queryable } from "@orch/kit";

export const replicasDb = {
  /** Returns true when the row had to be created (first beat, or we had been declared dead). */
  async heartbeat(db: Queryable, id: string, now: number): Promise<boolean> {
    const r = await db.query<{ inserted: boolean }>(
      "INSERT INTO replicas (id, started_at, heartbeat_at) VALUES ($1, $2, $2) ON CONFLICT (id) DO UPDATE SET heartbeat_at = $2 RETURNING (xmax = 0) AS inserted",
      [id, now],
    );
    return r.rows[0]?.inserted ?? false;
  },
  async remove(db: Queryable, id: string): Promise<void> {
    await db.query("DELETE FROM replicas WHERE id = $1", [id]);
  },
  /** Forgets replicas silent since `before` and returns the ones still alive. */
  async pruneDead(db: Queryable, before: number): Promise<string[]> {
    await db.query("DELETE FROM replicas WHERE heartbeat_at < $1", [before]);
    return (await db.query<{ id: string }>("SELECT id FROM replicas")).rows.map((r) => r.id);
  },
};
