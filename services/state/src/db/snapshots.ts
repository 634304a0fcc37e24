import type { Queryable } from "@orch/kit";

export interface SnapshotRow {
  node_id: string;
  module: string;
  module_sha256: string;
  position: number;
  attributes: Record<string, string>;
  tags: Record<string, string>;
  operation_id: string;
  applied_at: number;
}

export interface BelievedRow {
  node_id: string;
  module: string;
  resource_id: string;
  type: string;
  status: string;
  observed: Record<string, unknown>;
  operation_id: string;
  applied_at: number;
}

export interface DriftResource {
  module: string;
  id: string;
  type: string;
  diff: string;
  status: string;
  message: string;
}

export interface DriftRow {
  id: string;
  node_id: string;
  operation_id: string;
  checked_at: number;
  drifted: boolean;
  resources: DriftResource[];
}

const SNAP_COLS = "node_id, module, module_sha256, position, attributes, tags, operation_id, applied_at";
const DRIFT_COLS = "id, node_id, operation_id, checked_at, drifted, resources";

export const snapshotsDb = {
  async ofNode(db: Queryable, nodeId: string): Promise<SnapshotRow[]> {
    return (
      await db.query<SnapshotRow>(
        `SELECT ${SNAP_COLS} FROM snapshots WHERE node_id = $1 ORDER BY applied_at, position`,
        [nodeId],
      )
    ).rows;
  },
  async upsert(db: Queryable, s: SnapshotRow): Promise<void> {
    await db.query(
      `INSERT INTO snapshots (${SNAP_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
       ON CONFLICT (node_id, module) DO UPDATE SET module_sha256 = EXCLUDED.module_sha256, position = EXCLUDED.position, attributes = EXCLUDED.attributes,
         tags = EXCLUDED.tags, operation_id = EXCLUDED.operation_id, applied_at = EXCLUDED.applied_at`,
      [
        s.node_id,
        s.module,
        s.module_sha256,
        s.position,
        JSON.stringify(s.attributes),
        JSON.stringify(s.tags),
        s.operation_id,
        s.applied_at,
      ],
    );
  },
  async nodes(db: Queryable): Promise<string[]> {
    return (await db.query<{ node_id: string }>("SELECT DISTINCT node_id FROM snapshots ORDER BY node_id")).rows.map(
      (r) => r.node_id,
    );
  },
};

export const believedDb = {
  /** Replaces what is believed about one module on one agent. */
  async replaceModule(db: Queryable, nodeId: string, module: string, rows: BelievedRow[]): Promise<void> {
    await db.query("DELETE FROM believed WHERE node_id = $1 AND module = $2", [nodeId, module]);
    if (rows.length === 0) return;
    await db.query(
      `INSERT INTO believed (node_id, module, resource_id, type, status, observed, operation_id, applied_at)
       SELECT node_id, module, resource_id, type, status, observed, operation_id, applied_at
         FROM jsonb_to_recordset($1::jsonb) AS x(node_id text, module text, resource_id text, type text, status text, observed jsonb, operation_id text, applied_at bigint)`,
      [JSON.stringify(rows)],
    );
  },
  /** Replaces what is believed about these resources only (a subset apply: the rest of the module is unchanged). */
  async replaceResources(db: Queryable, nodeId: string, rows: BelievedRow[]): Promise<void> {
    if (rows.length === 0) return;
    await db.query(
      `DELETE FROM believed b USING jsonb_to_recordset($2::jsonb) AS x(module text, resource_id text)
        WHERE b.node_id = $1 AND b.module = x.module AND b.resource_id = x.resource_id`,
      [nodeId, JSON.stringify(rows.map((r) => ({ module: r.module, resource_id: r.resource_id })))],
    );
    await db.query(
      `INSERT INTO believed (node_id, module, resource_id, type, status, observed, operation_id, applied_at)
       SELECT node_id, module, resource_id, type, status, observed, operation_id, applied_at
         FROM jsonb_to_recordset($1::jsonb) AS x(node_id text, module text, resource_id text, type text, status text, observed jsonb, operation_id text, applied_at bigint)`,
      [JSON.stringify(rows)],
    );
  },
  async ofNode(db: Queryable, nodeId: string): Promise<BelievedRow[]> {
    return (
      await db.query<BelievedRow>(
        "SELECT node_id, module, resource_id, type, status, observed, operation_id, applied_at FROM believed WHERE node_id = $1 ORDER BY module, resource_id",
        [nodeId],
      )
    ).rows;
  },
};

export const driftDb = {
  async insert(db: Queryable, d: DriftRow): Promise<void> {
    await db.query(`INSERT INTO drift (${DRIFT_COLS}) VALUES ($1, $2, $3, $4, $5, $6)`, [
      d.id,
      d.node_id,
      d.operation_id,
      d.checked_at,
      d.drifted,
      JSON.stringify(d.resources),
    ]);
  },
  async latest(db: Queryable, nodeId: string): Promise<DriftRow | undefined> {
    return (
      await db.query<DriftRow>(`SELECT ${DRIFT_COLS} FROM drift WHERE node_id = $1 ORDER BY id DESC LIMIT 1`, [nodeId])
    ).rows[0];
  },
  async get(db: Queryable, id: string): Promise<DriftRow | undefined> {
    return (await db.query<DriftRow>(`SELECT ${DRIFT_COLS} FROM drift WHERE id = $1`, [id])).rows[0];
  },
  async byOperation(db: Queryable, operationId: string): Promise<DriftRow | undefined> {
    return (
      await db.query<DriftRow>(`SELECT ${DRIFT_COLS} FROM drift WHERE operation_id = $1 ORDER BY id DESC LIMIT 1`, [
        operationId,
      ])
    ).rows[0];
  },
  async page(db: Queryable, nodeId: string, limit: number, before: string): Promise<DriftRow[]> {
    return (
      await db.query<DriftRow>(
        `SELECT ${DRIFT_COLS} FROM drift WHERE node_id = $1 AND ($2 = '' OR id < $2) ORDER BY id DESC LIMIT $3`,
        [nodeId, before, limit],
      )
    ).rows;
  },
};
