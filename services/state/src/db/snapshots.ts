import type { Queryable } from "@orch/kit";

export interface SnapshotRow {
  node_id: string;
  module: string;
  module_sha256: string;
  position: number;
  attributes: Record<string, string>;
  tags: Record<string, string>;
  /** Version 2: the values keys the module's templates read, and its resolved parameters; null for version 1. */
  used_values?: Record<string, unknown> | null;
  parameters?: Record<string, unknown> | null;
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

const SNAP_COLS =
  "node_id, module, module_sha256, position, attributes, tags, used_values, parameters, operation_id, applied_at";
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
  /** The snapshots of several agents in one statement (the runner's grouped reads), in no order across agents. */
  async ofNodes(db: Queryable, nodeIds: readonly string[]): Promise<SnapshotRow[]> {
    return (
      await db.query<SnapshotRow>(
        `SELECT ${SNAP_COLS} FROM snapshots WHERE node_id = ANY($1::text[]) ORDER BY applied_at, position`,
        [nodeIds],
      )
    ).rows;
  },
  async upsert(db: Queryable, s: SnapshotRow): Promise<void> {
    await db.query(
      `INSERT INTO snapshots (${SNAP_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
       ON CONFLICT (node_id, module) DO UPDATE SET module_sha256 = EXCLUDED.module_sha256, position = EXCLUDED.position, attributes = EXCLUDED.attributes,
         tags = EXCLUDED.tags, used_values = EXCLUDED.used_values, parameters = EXCLUDED.parameters,
         operation_id = EXCLUDED.operation_id, applied_at = EXCLUDED.applied_at`,
      [
        s.node_id,
        s.module,
        s.module_sha256,
        s.position,
        JSON.stringify(s.attributes),
        JSON.stringify(s.tags),
        s.used_values == null ? null : JSON.stringify(s.used_values),
        s.parameters == null ? null : JSON.stringify(s.parameters),
        s.operation_id,
        s.applied_at,
      ],
    );
  },
  /** upsert of several snapshots in one statement; each (node_id, module) at most once. */
  async upsertMany(db: Queryable, rows: readonly SnapshotRow[]): Promise<void> {
    if (rows.length === 0) return;
    await db.query(
      `INSERT INTO snapshots (${SNAP_COLS})
       SELECT ${SNAP_COLS} FROM jsonb_to_recordset($1::jsonb) AS x(node_id text, module text, module_sha256 text, position int,
                                                                  attributes jsonb, tags jsonb, used_values jsonb, parameters jsonb,
                                                                  operation_id text, applied_at bigint)
       ON CONFLICT (node_id, module) DO UPDATE SET module_sha256 = EXCLUDED.module_sha256, position = EXCLUDED.position, attributes = EXCLUDED.attributes,
         tags = EXCLUDED.tags, used_values = EXCLUDED.used_values, parameters = EXCLUDED.parameters,
         operation_id = EXCLUDED.operation_id, applied_at = EXCLUDED.applied_at`,
      [JSON.stringify(rows)],
    );
  },
  async nodes(db: Queryable): Promise<string[]> {
    return (await db.query<{ node_id: string }>("SELECT DISTINCT node_id FROM snapshots ORDER BY node_id")).rows.map(
      (r) => r.node_id,
    );
  },
};

/** Believed rows in, as one JSON array: one statement whatever their number. */
const INSERT_BELIEVED = `INSERT INTO believed (node_id, module, resource_id, type, status, observed, operation_id, applied_at)
  SELECT node_id, module, resource_id, type, status, observed, operation_id, applied_at
    FROM jsonb_to_recordset($1::jsonb) AS x(node_id text, module text, resource_id text, type text, status text, observed jsonb, operation_id text, applied_at bigint)`;

export const believedDb = {
  /** Replaces what is believed about one module on one agent. */
  async replaceModule(db: Queryable, nodeId: string, module: string, rows: BelievedRow[]): Promise<void> {
    await believedDb.replaceModules(db, [{ node_id: nodeId, module }], rows);
  },
  /** replaceModule of several (node, module) pairs: two statements for all of them. */
  async replaceModules(
    db: Queryable,
    modules: ReadonlyArray<{ node_id: string; module: string }>,
    rows: readonly BelievedRow[],
  ): Promise<void> {
    if (modules.length === 0) return;
    await db.query(
      "DELETE FROM believed b USING unnest($1::text[], $2::text[]) AS x(node_id, module) WHERE b.node_id = x.node_id AND b.module = x.module",
      [modules.map((m) => m.node_id), modules.map((m) => m.module)],
    );
    if (rows.length === 0) return;
    await db.query(INSERT_BELIEVED, [JSON.stringify(rows)]);
  },
  /** Replaces what is believed about these resources only (a subset apply: the rest of the module is unchanged). */
  async replaceResources(db: Queryable, nodeId: string, rows: BelievedRow[]): Promise<void> {
    if (rows.length === 0) return;
    await db.query(
      `DELETE FROM believed b USING jsonb_to_recordset($2::jsonb) AS x(module text, resource_id text)
        WHERE b.node_id = $1 AND b.module = x.module AND b.resource_id = x.resource_id`,
      [nodeId, JSON.stringify(rows.map((r) => ({ module: r.module, resource_id: r.resource_id })))],
    );
    await db.query(INSERT_BELIEVED, [JSON.stringify(rows)]);
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
  async insertMany(db: Queryable, rows: readonly DriftRow[]): Promise<void> {
    if (rows.length === 0) return;
    await db.query(
      `INSERT INTO drift (${DRIFT_COLS})
       SELECT ${DRIFT_COLS} FROM jsonb_to_recordset($1::jsonb) AS x(id text, node_id text, operation_id text, checked_at bigint, drifted boolean, resources jsonb)`,
      [JSON.stringify(rows)],
    );
  },
  /** latest of several nodes in one query, by node id; nodes without a record are missing. */
  async latestOf(db: Queryable, nodeIds: readonly string[]): Promise<Map<string, DriftRow>> {
    if (nodeIds.length === 0) return new Map();
    const r = await db.query<DriftRow>(
      `SELECT l.* FROM unnest($1::text[]) AS n(node)
         CROSS JOIN LATERAL (SELECT ${DRIFT_COLS} FROM drift d WHERE d.node_id = n.node ORDER BY d.id DESC LIMIT 1) AS l`,
      [nodeIds],
    );
    return new Map(r.rows.map((d) => [d.node_id, d]));
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
