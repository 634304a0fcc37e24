import type { Queryable } from "@orch/kit";

export const remediationsDb = {
  /**
   * Takes the (assignment, agent) slot when its last remediation is older than `intervalMs`; false when
   * one happened within the interval. Atomic, so replicas racing for one agent re-apply it once.
   */
  async claim(db: Queryable, assignment: string, nodeId: string, now: number, intervalMs: number): Promise<boolean> {
    const r = await db.query(
      `INSERT INTO remediations (assignment, node_id, last_at) VALUES ($1, $2, $3)
       ON CONFLICT (assignment, node_id) DO UPDATE SET last_at = EXCLUDED.last_at
         WHERE remediations.last_at <= EXCLUDED.last_at - $4`,
      [assignment, nodeId, now, intervalMs],
    );
    return r.rowCount === 1;
  },
};
