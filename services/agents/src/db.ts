import type { Queryable } from "@orch/kit";

export type AgentStatus = "pending" | "approved" | "rejected";

export interface AgentRow {
  node_id: string;
  public_key: string;
  name: string | null;
  status: AgentStatus;
  tags: Record<string, string>;
  attributes: Record<string, string>;
  connected: boolean;
  replica: string | null;
  session: string | null;
  first_seen: number;
  last_seen: number;
  address: string;
  version: string;
}

const COLS =
  "node_id, public_key, name, status, tags, attributes, connected, replica, session, first_seen, last_seen, address, version";

/** What a link knows when its handshake succeeds. */
export interface LinkUp {
  nodeId: string;
  publicKey: string;
  replica: string;
  session: string;
  address: string;
  version: string;
  attributes: Record<string, string>;
  now: number;
}

export const agentsDb = {
  async byNodeId(db: Queryable, nodeId: string, lock = false): Promise<AgentRow | undefined> {
    return (
      await db.query<AgentRow>(`SELECT ${COLS} FROM agents WHERE node_id = $1${lock ? " FOR UPDATE" : ""}`, [nodeId])
    ).rows[0];
  },
  /** By node id or approved name. */
  async byRef(db: Queryable, ref: string, lock = false): Promise<AgentRow | undefined> {
    return (
      await db.query<AgentRow>(
        `SELECT ${COLS} FROM agents WHERE node_id = $1 OR name = $1 ORDER BY node_id = $1 DESC LIMIT 1${lock ? " FOR UPDATE" : ""}`,
        [ref],
      )
    ).rows[0];
  },
  async byName(db: Queryable, name: string): Promise<AgentRow | undefined> {
    return (await db.query<AgentRow>(`SELECT ${COLS} FROM agents WHERE name = $1`, [name])).rows[0];
  },
  async page(db: Queryable, opts: { limit: number; after: string; status: string }): Promise<AgentRow[]> {
    return (
      await db.query<AgentRow>(
        `SELECT ${COLS} FROM agents WHERE node_id > $1 AND ($2 = '' OR status = $2) ORDER BY node_id LIMIT $3`,
        [opts.after, opts.status, opts.limit],
      )
    ).rows;
  },
  /** Inserts a first-time agent as pending; false when it already existed (a concurrent first connect). */
  async insertPending(db: Queryable, up: LinkUp): Promise<boolean> {
    const r = await db.query(
      `INSERT INTO agents (node_id, public_key, status, attributes, first_seen, last_seen, address, version)
       VALUES ($1, $2, 'pending', $3, $4, $4, $5, $6) ON CONFLICT (node_id) DO NOTHING`,
      [up.nodeId, up.publicKey, JSON.stringify(up.attributes), up.now, up.address, up.version],
    );
    return r.rowCount === 1;
  },
  async markConnected(db: Queryable, up: LinkUp): Promise<AgentRow | undefined> {
    const attrs = Object.keys(up.attributes).length ? JSON.stringify(up.attributes) : null;
    return (
      await db.query<AgentRow>(
        `UPDATE agents SET connected = true, replica = $2, session = $3, address = $4, version = $5,
                attributes = COALESCE($6::jsonb, attributes), last_seen = $7
          WHERE node_id = $1 RETURNING ${COLS}`,
        [up.nodeId, up.replica, up.session, up.address, up.version, attrs, up.now],
      )
    ).rows[0];
  },
  /** Clears `connected` only if this session still owns the row; returns the row when it did. */
  async markDisconnected(db: Queryable, nodeId: string, session: string, now: number): Promise<AgentRow | undefined> {
    return (
      await db.query<AgentRow>(
        `UPDATE agents SET connected = false, replica = NULL, session = NULL, last_seen = $3 WHERE node_id = $1 AND session = $2 RETURNING ${COLS}`,
        [nodeId, session, now],
      )
    ).rows[0];
  },
  async setAttributes(
    db: Queryable,
    nodeId: string,
    session: string,
    attributes: Record<string, string>,
    now: number,
  ): Promise<void> {
    await db.query("UPDATE agents SET attributes = $3, last_seen = $4 WHERE node_id = $1 AND session = $2", [
      nodeId,
      session,
      JSON.stringify(attributes),
      now,
    ]);
  },
  async setStatus(db: Queryable, nodeId: string, status: AgentStatus, name: string | null): Promise<AgentRow> {
    return (
      await db.query<AgentRow>(`UPDATE agents SET status = $2, name = $3 WHERE node_id = $1 RETURNING ${COLS}`, [
        nodeId,
        status,
        name,
      ])
    ).rows[0]!;
  },
  async setTags(db: Queryable, nodeId: string, tags: Record<string, string>): Promise<AgentRow> {
    return (
      await db.query<AgentRow>(`UPDATE agents SET tags = $2 WHERE node_id = $1 RETURNING ${COLS}`, [
        nodeId,
        JSON.stringify(tags),
      ])
    ).rows[0]!;
  },
  async remove(db: Queryable, nodeId: string): Promise<void> {
    await db.query("DELETE FROM metrics WHERE node_id = $1", [nodeId]);
    await db.query("DELETE FROM agents WHERE node_id = $1", [nodeId]);
  },
  async distinctTags(db: Queryable): Promise<Array<{ key: string; values: string[] }>> {
    return (
      await db.query<{ key: string; values: string[] }>(
        `SELECT t.key, array_agg(DISTINCT t.value ORDER BY t.value) AS values
           FROM agents a, jsonb_each_text(a.tags) t
          GROUP BY t.key ORDER BY t.key`,
      )
    ).rows;
  },
  /** Bumps last_seen for agents whose links are alive (batched from metrics frames). */
  async touch(db: Queryable, nodeIds: string[], now: number): Promise<void> {
    if (nodeIds.length)
      await db.query("UPDATE agents SET last_seen = $2 WHERE node_id = ANY($1) AND last_seen < $2", [nodeIds, now]);
  },
  /** Agents still marked connected through replicas that are gone; clears them and returns them. */
  async disconnectOrphans(db: Queryable, liveReplicas: string[], now: number): Promise<AgentRow[]> {
    return (
      await db.query<AgentRow>(
        `UPDATE agents SET connected = false, replica = NULL, session = NULL, last_seen = GREATEST(last_seen, $2)
          WHERE connected AND (replica IS NULL OR NOT (replica = ANY($1))) RETURNING ${COLS}`,
        [liveReplicas, now],
      )
    ).rows;
  },
};

export interface MetricsRow {
  node_id: string;
  taken_at: number;
  cpu_percent: number;
  load1: number;
  load5: number;
  load15: number;
  memory_total: number;
  memory_used: number;
  disk_total: number;
  disk_used: number;
  net_rx_bytes: number;
  net_tx_bytes: number;
  uptime_seconds: number;
}

const METRIC_COLS = [
  "node_id",
  "taken_at",
  "cpu_percent",
  "load1",
  "load5",
  "load15",
  "memory_total",
  "memory_used",
  "disk_total",
  "disk_used",
  "net_rx_bytes",
  "net_tx_bytes",
  "uptime_seconds",
] as const;
const METRIC_TYPES = ["text", "bigint", ...Array(11).fill("float8")] as string[];

export const metricsDb = {
  /** One statement for a whole batch (column arrays + unnest); a repeated sample is ignored. */
  async insertMany(db: Queryable, rows: MetricsRow[]): Promise<void> {
    if (!rows.length) return;
    const arrays = METRIC_COLS.map((c) => rows.map((r) => r[c]));
    const unnest = METRIC_COLS.map((_c, i) => `$${i + 1}::${METRIC_TYPES[i]}[]`).join(", ");
    await db.query(
      `INSERT INTO metrics (${METRIC_COLS.join(", ")}) SELECT * FROM unnest(${unnest}) ON CONFLICT (node_id, taken_at) DO NOTHING`,
      arrays,
    );
  },
  async history(
    db: Queryable,
    nodeId: string,
    opts: { since: number; until: number; limit: number },
  ): Promise<MetricsRow[]> {
    return (
      await db.query<MetricsRow>(
        `SELECT ${METRIC_COLS.join(", ")} FROM metrics
          WHERE node_id = $1 AND taken_at >= $2 AND ($3::bigint = 0 OR taken_at < $3)
          ORDER BY taken_at DESC LIMIT $4`,
        [nodeId, opts.since, opts.until, opts.limit],
      )
    ).rows;
  },
  async latest(db: Queryable, nodeId: string): Promise<MetricsRow | undefined> {
    return (
      await db.query<MetricsRow>(
        `SELECT ${METRIC_COLS.join(", ")} FROM metrics WHERE node_id = $1 ORDER BY taken_at DESC LIMIT 1`,
        [nodeId],
      )
    ).rows[0];
  },
  /** Deletes at most `batch` rows older than the cutoff; returns how many. */
  async pruneBatch(db: Queryable, before: number, batch: number): Promise<number> {
    const r = await db.query(
      "DELETE FROM metrics WHERE ctid = ANY(ARRAY(SELECT ctid FROM metrics WHERE taken_at < $1 LIMIT $2))",
      [before, batch],
    );
    return r.rowCount ?? 0;
  },
};

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
