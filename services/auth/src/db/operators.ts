import type { Queryable } from "@orch/kit";

export interface OperatorRow {
  id: string;
  name: string;
  /** Null for an operator provisioned by single sign-on (it has no key). */
  public_key: string | null;
  role: "admin" | "operator";
  active: boolean;
  created_at: number;
  created_by: string;
  /** Agent selector limiting what the operator reaches; null = unscoped (docs/access.md). */
  agent_selector: string | null;
  /** `sso:<provider>` when a single sign-on identity backs the operator (selects only). */
  sso_source?: string | null;
  /** The mapping rule that matched at its last sign-in or refresh (selects only). */
  sso_rule?: string | null;
}

const COLS = "id, name, public_key, role, active, created_at, created_by, agent_selector";

/** Where an operator came from, for reads: its SSO identity's provider and rule, if any. */
export const ssoOriginCols = (alias: string) =>
  `(SELECT 'sso:' || p.name FROM sso_identities i JOIN identity_providers p ON p.id = i.provider_id WHERE i.operator_id = ${alias}.id) AS sso_source,
   (SELECT i.rule_name FROM sso_identities i WHERE i.operator_id = ${alias}.id) AS sso_rule`;
const READ_COLS = `${COLS}, ${ssoOriginCols("operators")}`;

// Named (prepared) statements: Postgres parses and plans them once per connection, not per call.

export const operatorsDb = {
  async byKey(db: Queryable, publicKey: string): Promise<OperatorRow | undefined> {
    return (
      await db.query<OperatorRow>({
        name: "auth.operator_by_key",
        text: `SELECT ${READ_COLS} FROM operators WHERE public_key = $1`,
        values: [publicKey],
      })
    ).rows[0];
  },
  async byId(db: Queryable, id: string): Promise<OperatorRow | undefined> {
    return (
      await db.query<OperatorRow>({
        name: "auth.operator_by_id",
        text: `SELECT ${READ_COLS} FROM operators WHERE id = $1`,
        values: [id],
      })
    ).rows[0];
  },
  async byIdOrName(db: Queryable, idOrName: string): Promise<OperatorRow | undefined> {
    return (
      await db.query<OperatorRow>({
        name: "auth.operator_by_id_or_name",
        text: `SELECT ${READ_COLS} FROM operators WHERE id = $1 OR name = $1 LIMIT 1`,
        values: [idOrName],
      })
    ).rows[0];
  },
  async page(db: Queryable, limit: number, after: string): Promise<OperatorRow[]> {
    return (
      await db.query<OperatorRow>({
        name: "auth.operators_page",
        text: `SELECT ${READ_COLS} FROM operators WHERE id > $1 ORDER BY id LIMIT $2`,
        values: [after, limit],
      })
    ).rows;
  },
  async insert(db: Queryable, o: OperatorRow): Promise<void> {
    await db.query(`INSERT INTO operators (${COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, [
      o.id,
      o.name,
      o.public_key,
      o.role,
      o.active,
      o.created_at,
      o.created_by,
      o.agent_selector,
    ]);
  },
  async setSelector(db: Queryable, id: string, selector: string | null): Promise<OperatorRow> {
    const sql = `UPDATE operators SET agent_selector = $2 WHERE id = $1 RETURNING ${READ_COLS}`;
    return (await db.query<OperatorRow>(sql, [id, selector])).rows[0]!;
  },
  async activeAdminIdsForUpdate(db: Queryable): Promise<string[]> {
    return (
      await db.query<{ id: string }>("SELECT id FROM operators WHERE role = 'admin' AND active FOR UPDATE")
    ).rows.map((r) => r.id);
  },
  async remove(db: Queryable, id: string): Promise<void> {
    await db.query("DELETE FROM operators WHERE id = $1", [id]);
  },
};
