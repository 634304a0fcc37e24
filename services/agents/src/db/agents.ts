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
  /** Why a pending agent's join token did not approve it (JOIN_PENDING_REASONS), else "". */
  pending_reason: string;
  /** The join token that approved it, if one did. */
  join_token_id: string | null;
}

const COLS =
  "node_id, public_key, name, status, tags, attributes, connected, replica, session, first_seen, last_seen, address, version, pending_reason, join_token_id";

/** Counts by status and connection (connected/disconnected count approved agents only). */
export interface AgentCounts {
  total: number;
  connected: number;
  disconnected: number;
  pending: number;
  approved: number;
  rejected: number;
}

/** What a selector or a scope is matched against, plus what the counts need: no keys or addresses. */
export type AgentFacts = Pick<AgentRow, "node_id" | "name" | "status" | "connected" | "tags" | "attributes">;

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
  /** The join token from the Hello, when the agent presented one (a secret: never logged or stored). */
  joinToken?: string;
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
  /** The whole registry counted in one pass. */
  async counts(db: Queryable): Promise<AgentCounts> {
    const r = await db.query<Record<keyof AgentCounts, string>>(
      `SELECT count(*) AS total,
              count(*) FILTER (WHERE status = 'approved' AND connected) AS connected,
              count(*) FILTER (WHERE status = 'approved' AND NOT connected) AS disconnected,
              count(*) FILTER (WHERE status = 'pending') AS pending,
              count(*) FILTER (WHERE status = 'approved') AS approved,
              count(*) FILTER (WHERE status = 'rejected') AS rejected
         FROM agents`,
    );
    const row = r.rows[0]!;
    return {
      total: Number(row.total),
      connected: Number(row.connected),
      disconnected: Number(row.disconnected),
      pending: Number(row.pending),
      approved: Number(row.approved),
      rejected: Number(row.rejected),
    };
  },
  /** A batch of agents in node id order, only the columns a selector and the counts read. */
  async factsPage(db: Queryable, opts: { limit: number; after: string }): Promise<AgentFacts[]> {
    return (
      await db.query<AgentFacts>(
        "SELECT node_id, name, status, connected, tags, attributes FROM agents WHERE node_id > $1 ORDER BY node_id LIMIT $2",
        [opts.after, opts.limit],
      )
    ).rows;
  },
  /** Inserts a first-time agent as pending; false when it already existed (a concurrent first connect). */
  async insertPending(db: Queryable, up: LinkUp, pendingReason = ""): Promise<boolean> {
    const r = await db.query(
      `INSERT INTO agents (node_id, public_key, status, attributes, first_seen, last_seen, address, version, pending_reason)
       VALUES ($1, $2, 'pending', $3, $4, $4, $5, $6, $7) ON CONFLICT (node_id) DO NOTHING`,
      [up.nodeId, up.publicKey, JSON.stringify(up.attributes), up.now, up.address, up.version, pendingReason],
    );
    return r.rowCount === 1;
  },
  /** Approves a pending agent through a join token: its name, the token's tags, the token's id. */
  async approveJoined(
    db: Queryable,
    nodeId: string,
    join: { name: string; tags: Record<string, string>; tokenId: string },
  ): Promise<AgentRow> {
    return (
      await db.query<AgentRow>(
        `UPDATE agents SET status = 'approved', name = $2, tags = $3, join_token_id = $4, pending_reason = ''
          WHERE node_id = $1 RETURNING ${COLS}`,
        [nodeId, join.name, JSON.stringify(join.tags), join.tokenId],
      )
    ).rows[0]!;
  },
  async setPendingReason(db: Queryable, nodeId: string, reason: string): Promise<AgentRow> {
    return (
      await db.query<AgentRow>(`UPDATE agents SET pending_reason = $2 WHERE node_id = $1 RETURNING ${COLS}`, [
        nodeId,
        reason,
      ])
    ).rows[0]!;
  },
  /** Which of `names` are taken (any agent, any status: names are unique across the registry). */
  async takenNames(db: Queryable, names: string[]): Promise<Set<string>> {
    const r = await db.query<{ name: string }>("SELECT name FROM agents WHERE name = ANY($1)", [names]);
    return new Set(r.rows.map((x) => x.name));
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
      await db.query<AgentRow>(
        // Leaving pending (by hand) ends the reason a join token gave for it.
        `UPDATE agents SET status = $2, name = $3, pending_reason = CASE WHEN $2 = 'pending' THEN pending_reason ELSE '' END
          WHERE node_id = $1 RETURNING ${COLS}`,
        [nodeId, status, name],
      )
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
