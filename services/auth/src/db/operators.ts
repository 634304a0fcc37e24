import type { Queryable } from "@orch/kit";

export interface OperatorRow {
  id: string;
  name: string;
  public_key: string;
  role: "admin" | "operator";
  active: boolean;
  created_at: number;
  created_by: string;
  /** Agent selector limiting what the operator reaches; null = unscoped (docs/access.md). */
  agent_selector: string | null;
}

const COLS = "id, name, public_key, role, active, created_at, created_by, agent_selector";

// Named (prepared) statements: Postgres parses and plans them once per connection, not per call.

export const operatorsDb = {
  async byKey(db: Queryable, publicKey: string): Promise<OperatorRow | undefined> {
    return (
      await db.query<OperatorRow>({
        name: "auth.operator_by_key",
        text: `SELECT ${COLS} FROM operators WHERE public_key = $1`,
        values: [publicKey],
      })
    ).rows[0];
  },
  async byId(db: Queryable, id: string): Promise<OperatorRow | undefined> {
    return (
      await db.query<OperatorRow>({
        name: "auth.operator_by_id",
        text: `SELECT ${COLS} FROM operators WHERE id = $1`,
        values: [id],
      })
    ).rows[0];
  },
  async byIdOrName(db: Queryable, idOrName: string): Promise<OperatorRow | undefined> {
    return (
      await db.query<OperatorRow>({
        name: "auth.operator_by_id_or_name",
        text: `SELECT ${COLS} FROM operators WHERE id = $1 OR name = $1 LIMIT 1`,
        values: [idOrName],
      })
    ).rows[0];
  },
  async page(db: Queryable, limit: number, after: string): Promise<OperatorRow[]> {
    return (
      await db.query<OperatorRow>({
        name: "auth.operators_page",
        text: `SELECT ${COLS} FROM operators WHERE id > $1 ORDER BY id LIMIT $2`,
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
    const sql = `UPDATE operators SET agent_selector = $2 WHERE id = $1 RETURNING ${COLS}`;
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
