import type { Queryable } from "@orch/kit";

export interface PolicyRow {
  name: string;
  description: string;
  actions: string[];
  selector: string;
  approvals_required: number;
  approvers: string[];
  requester_may_approve: boolean;
  expires_after_seconds: number;
  max_access_seconds: number;
  created_at: number;
  updated_at: number;
  created_by: string;
  /** The git source managing it, "" when written through the API. */
  source: string;
  source_commit: string;
}

const COLS =
  "name, description, actions, selector, approvals_required, approvers, requester_may_approve, expires_after_seconds, created_at, updated_at, created_by, max_access_seconds, source, source_commit";

export const policiesDb = {
  async byName(db: Queryable, name: string, lock = false): Promise<PolicyRow | undefined> {
    const q = `SELECT ${COLS} FROM approval_policies WHERE name = $1${lock ? " FOR UPDATE" : ""}`;
    return (await db.query<PolicyRow>(q, [name])).rows[0];
  },
  async page(db: Queryable, limit: number, after: string): Promise<PolicyRow[]> {
    const q = `SELECT ${COLS} FROM approval_policies WHERE name > $1 ORDER BY name LIMIT $2`;
    return (await db.query<PolicyRow>(q, [after, limit])).rows;
  },
  /** Every policy covering `action`: policies are few, the selector is matched in code. */
  async forAction(db: Queryable, action: string): Promise<PolicyRow[]> {
    const q = `SELECT ${COLS} FROM approval_policies WHERE $1 = ANY(actions) ORDER BY name`;
    return (await db.query<PolicyRow>(q, [action])).rows;
  },
  async upsert(db: Queryable, p: PolicyRow): Promise<PolicyRow> {
    const r = await db.query<PolicyRow>(
      `INSERT INTO approval_policies (${COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
       ON CONFLICT (name) DO UPDATE SET description = EXCLUDED.description, actions = EXCLUDED.actions,
         selector = EXCLUDED.selector, approvals_required = EXCLUDED.approvals_required,
         approvers = EXCLUDED.approvers, requester_may_approve = EXCLUDED.requester_may_approve,
         expires_after_seconds = EXCLUDED.expires_after_seconds, updated_at = EXCLUDED.updated_at,
         max_access_seconds = EXCLUDED.max_access_seconds, source = EXCLUDED.source,
         source_commit = EXCLUDED.source_commit
       RETURNING ${COLS}`,
      [
        p.name,
        p.description,
        p.actions,
        p.selector,
        p.approvals_required,
        p.approvers,
        p.requester_may_approve,
        p.expires_after_seconds,
        p.created_at,
        p.updated_at,
        p.created_by,
        p.max_access_seconds,
        p.source,
        p.source_commit,
      ],
    );
    return r.rows[0]!;
  },
  /** A source's policies, locked: a sync replaces them as a whole. */
  async bySource(db: Queryable, source: string): Promise<PolicyRow[]> {
    const q = `SELECT ${COLS} FROM approval_policies WHERE source = $1 ORDER BY name FOR UPDATE`;
    return (await db.query<PolicyRow>(q, [source])).rows;
  },
  /** The source was deleted: its policies stay, written through the API from now on. */
  async release(db: Queryable, source: string): Promise<string[]> {
    const r = await db.query<{ name: string }>(
      "UPDATE approval_policies SET source = '', source_commit = '' WHERE source = $1 RETURNING name",
      [source],
    );
    return r.rows.map((x) => x.name).sort();
  },
  async remove(db: Queryable, name: string): Promise<void> {
    await db.query("DELETE FROM approval_policies WHERE name = $1", [name]);
  },
};
