import type { Queryable } from "@orch/kit";
import type { ValueMap } from "./parse.js";

export interface ValueSetRow {
  name: string;
  /** "" only for `defaults`. */
  selector: string;
  priority: number;
  description: string;
  values: ValueMap;
  /** Dotted leaf key path → line in `content`. */
  lines: Record<string, number>;
  content: string;
  sha256: string;
  key_count: number;
  updated_at: number;
  updated_by: string;
  updated_by_name: string;
  /** The git source managing it (null: set through the API) and its commit. */
  source: string | null;
  source_commit: string;
}

export interface AgentValuesRow {
  node_id: string;
  values: ValueMap;
  lines: Record<string, number>;
  content: string;
  updated_at: number;
  updated_by: string;
  updated_by_name: string;
}

const SET_COLS =
  'name, selector, priority, description, "values", lines, content, sha256, key_count, updated_at, updated_by, updated_by_name, source, source_commit';
const SET_LIST_COLS =
  "name, selector, priority, description, '{}'::jsonb AS \"values\", '{}'::jsonb AS lines, ''::text AS content, sha256, key_count, updated_at, updated_by, updated_by_name, source, source_commit";
const AGENT_COLS = 'node_id, "values", lines, content, updated_at, updated_by, updated_by_name';

export const valueSetsDb = {
  async get(db: Queryable, name: string): Promise<ValueSetRow | undefined> {
    return (await db.query<ValueSetRow>(`SELECT ${SET_COLS} FROM value_sets WHERE name = $1`, [name])).rows[0];
  },
  async getForUpdate(db: Queryable, name: string): Promise<ValueSetRow | undefined> {
    return (await db.query<ValueSetRow>(`SELECT ${SET_COLS} FROM value_sets WHERE name = $1 FOR UPDATE`, [name]))
      .rows[0];
  },
  async page(db: Queryable, limit: number, after: string): Promise<ValueSetRow[]> {
    return (
      await db.query<ValueSetRow>(`SELECT ${SET_LIST_COLS} FROM value_sets WHERE name > $1 ORDER BY name LIMIT $2`, [
        after,
        limit,
      ])
    ).rows;
  },
  /** Every set with what merging needs (no YAML text): read once per fan-out. */
  async all(db: Queryable): Promise<Pick<ValueSetRow, "name" | "selector" | "priority" | "values" | "lines">[]> {
    return (
      await db.query<ValueSetRow>('SELECT name, selector, priority, "values", lines FROM value_sets ORDER BY name')
    ).rows;
  },
  /** Creates or replaces; returns whether a set of that name existed. */
  async upsert(db: Queryable, s: ValueSetRow): Promise<boolean> {
    const r = await db.query<{ inserted: boolean }>(
      `INSERT INTO value_sets (${SET_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
       ON CONFLICT (name) DO UPDATE SET selector = EXCLUDED.selector, priority = EXCLUDED.priority,
         description = EXCLUDED.description, "values" = EXCLUDED."values", lines = EXCLUDED.lines, content = EXCLUDED.content,
         sha256 = EXCLUDED.sha256, key_count = EXCLUDED.key_count, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by,
         updated_by_name = EXCLUDED.updated_by_name, source = EXCLUDED.source, source_commit = EXCLUDED.source_commit
       RETURNING (xmax = 0) AS inserted`,
      [
        s.name,
        s.selector,
        s.priority,
        s.description,
        JSON.stringify(s.values),
        JSON.stringify(s.lines),
        s.content,
        s.sha256,
        s.key_count,
        s.updated_at,
        s.updated_by,
        s.updated_by_name,
        s.source,
        s.source_commit,
      ],
    );
    return !r.rows[0]!.inserted;
  },
  async remove(db: Queryable, name: string): Promise<void> {
    await db.query("DELETE FROM value_sets WHERE name = $1", [name]);
  },
  /** The sets a git source manages and the named ones, locked until the transaction ends (its sync). */
  async ofSource(db: Queryable, source: string, names: string[]): Promise<ValueSetRow[]> {
    return (
      await db.query<ValueSetRow>(
        `SELECT ${SET_COLS} FROM value_sets WHERE name = ANY($1) OR source = $2 ORDER BY name FOR UPDATE`,
        [names, source],
      )
    ).rows;
  },
};

export const agentValuesDb = {
  async get(db: Queryable, nodeId: string): Promise<AgentValuesRow | undefined> {
    return (await db.query<AgentValuesRow>(`SELECT ${AGENT_COLS} FROM agent_values WHERE node_id = $1`, [nodeId]))
      .rows[0];
  },
  /** The own values of these agents (one query for a whole fan-out). */
  async many(db: Queryable, nodeIds: readonly string[]): Promise<AgentValuesRow[]> {
    if (nodeIds.length === 0) return [];
    return (
      await db.query<AgentValuesRow>(`SELECT ${AGENT_COLS} FROM agent_values WHERE node_id = ANY($1)`, [[...nodeIds]])
    ).rows;
  },
  async upsert(db: Queryable, r: AgentValuesRow): Promise<AgentValuesRow | undefined> {
    return (
      await db.query<AgentValuesRow>(
        `INSERT INTO agent_values (${AGENT_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7)
         ON CONFLICT (node_id) DO UPDATE SET "values" = EXCLUDED."values", lines = EXCLUDED.lines, content = EXCLUDED.content,
           updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by, updated_by_name = EXCLUDED.updated_by_name
         RETURNING ${AGENT_COLS}`,
        [
          r.node_id,
          JSON.stringify(r.values),
          JSON.stringify(r.lines),
          r.content,
          r.updated_at,
          r.updated_by,
          r.updated_by_name,
        ],
      )
    ).rows[0];
  },
  async remove(db: Queryable, nodeId: string): Promise<boolean> {
    return ((await db.query("DELETE FROM agent_values WHERE node_id = $1", [nodeId])).rowCount ?? 0) > 0;
  },
};
