import type { Queryable } from "@orch/kit";

export interface JoinTokenRow {
  id: string;
  secret_hash: Buffer;
  description: string;
  tags: Record<string, string>;
  name_prefix: string;
  max_uses: number;
  uses: number;
  created_at: number;
  expires_at: number;
  revoked_at: number | null;
  created_by: string;
  created_by_name: string;
}

export type JoinTokenState = "active" | "expired" | "exhausted" | "revoked";

const COLS =
  "id, secret_hash, description, tags, name_prefix, max_uses, uses, created_at, expires_at, revoked_at, created_by, created_by_name";

// bigint columns come back as strings from pg; every reader gets numbers.
const norm = (r: JoinTokenRow): JoinTokenRow => ({
  ...r,
  created_at: Number(r.created_at),
  expires_at: Number(r.expires_at),
  revoked_at: r.revoked_at === null ? null : Number(r.revoked_at),
});

/** Revoked wins over exhausted over expired: the strongest reason an operator acted on is shown. */
export function tokenState(r: JoinTokenRow, now: number): JoinTokenState {
  if (r.revoked_at !== null) return "revoked";
  if (r.max_uses > 0 && r.uses >= r.max_uses) return "exhausted";
  if (now >= r.expires_at) return "expired";
  return "active";
}

export const joinTokensDb = {
  async insert(db: Queryable, r: Omit<JoinTokenRow, "uses" | "revoked_at">): Promise<JoinTokenRow> {
    const res = await db.query<JoinTokenRow>(
      `INSERT INTO join_tokens (id, secret_hash, description, tags, name_prefix, max_uses, created_at, expires_at, created_by, created_by_name)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) RETURNING ${COLS}`,
      [
        r.id,
        r.secret_hash,
        r.description,
        JSON.stringify(r.tags),
        r.name_prefix,
        r.max_uses,
        r.created_at,
        r.expires_at,
        r.created_by,
        r.created_by_name,
      ],
    );
    return norm(res.rows[0]!);
  },
  /** Newest first (ids are lower-cased ULIDs, so id order is creation order); `before` = last id of the previous page. */
  async page(db: Queryable, opts: { limit: number; before: string }): Promise<JoinTokenRow[]> {
    const res = await db.query<JoinTokenRow>(
      `SELECT ${COLS} FROM join_tokens WHERE ($1 = '' OR id < $1) ORDER BY id DESC LIMIT $2`,
      [opts.before, opts.limit],
    );
    return res.rows.map(norm);
  },
  async byId(db: Queryable, id: string, lock = false): Promise<JoinTokenRow | undefined> {
    const r = (
      await db.query<JoinTokenRow>(`SELECT ${COLS} FROM join_tokens WHERE id = $1${lock ? " FOR UPDATE" : ""}`, [id])
    ).rows[0];
    return r && norm(r);
  },
  async revoke(db: Queryable, id: string, now: number): Promise<JoinTokenRow> {
    const r = await db.query<JoinTokenRow>(
      `UPDATE join_tokens SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1 RETURNING ${COLS}`,
      [id, now],
    );
    return norm(r.rows[0]!);
  },
  async incrementUses(db: Queryable, id: string): Promise<void> {
    await db.query("UPDATE join_tokens SET uses = uses + 1 WHERE id = $1", [id]);
  },
};
