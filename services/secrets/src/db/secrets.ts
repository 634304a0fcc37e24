import type { Queryable } from "@orch/kit";
import type { Sealed } from "../keyring.js";
import type { Restriction } from "../restriction.js";

export interface SecretMeta {
  name: string;
  description: string | null;
  expires_at: number | null;
  restriction: Restriction | null;
  created_at: number;
  created_by: string;
  updated_at: number;
  updated_by: string;
}

export interface SecretRow extends SecretMeta {
  /** Bumped (from one sequence) by every write: what a held write is planned against. */
  version: string;
  key_id: string;
  nonce: Buffer;
  ciphertext: Buffer;
  auth_tag: Buffer;
}

const META = "name, description, expires_at, restriction, created_at, created_by, updated_at, updated_by";
const SEALED = "key_id, nonce, ciphertext, auth_tag";

/** Metadata queries never select the ciphertext columns; only `sealed`/`forUpdate` do. */
export const secretsDb = {
  async page(db: Queryable, limit: number, after: string): Promise<SecretMeta[]> {
    return (
      await db.query<SecretMeta>(`SELECT ${META} FROM secrets WHERE name > $1 ORDER BY name LIMIT $2`, [after, limit])
    ).rows;
  },
  async meta(db: Queryable, name: string): Promise<SecretMeta | undefined> {
    return (await db.query<SecretMeta>(`SELECT ${META} FROM secrets WHERE name = $1`, [name])).rows[0];
  },
  async sealed(db: Queryable, name: string): Promise<SecretRow | undefined> {
    return (
      await db.query<SecretRow>(`SELECT ${META}, ${SEALED}, version::text AS version FROM secrets WHERE name = $1`, [
        name,
      ])
    ).rows[0];
  },
  async forUpdate(db: Queryable, name: string): Promise<SecretRow | undefined> {
    return (
      await db.query<SecretRow>(
        `SELECT ${META}, ${SEALED}, version::text AS version FROM secrets WHERE name = $1 FOR UPDATE`,
        [name],
      )
    ).rows[0];
  },
  /** The secret's metadata and version (a held write freezes it); no ciphertext. */
  async versioned(db: Queryable, name: string): Promise<(SecretMeta & { version: string }) | undefined> {
    return (
      await db.query<SecretMeta & { version: string }>(
        `SELECT ${META}, version::text AS version FROM secrets WHERE name = $1`,
        [name],
      )
    ).rows[0];
  },
  async insert(db: Queryable, m: SecretMeta, s: Sealed): Promise<string> {
    const r = await db.query<{ version: string }>(
      `INSERT INTO secrets (${META}, ${SEALED}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) RETURNING version::text AS version`,
      [
        m.name,
        m.description,
        m.expires_at,
        m.restriction === null ? null : JSON.stringify(m.restriction),
        m.created_at,
        m.created_by,
        m.updated_at,
        m.updated_by,
        s.keyId,
        s.nonce,
        s.ciphertext,
        s.tag,
      ],
    );
    return r.rows[0]!.version;
  },
  /** Writes the metadata and bumps the version (every update goes through here); answers the new version. */
  async updateMeta(db: Queryable, m: SecretMeta): Promise<string> {
    const r = await db.query<{ version: string }>(
      "UPDATE secrets SET description = $2, expires_at = $3, restriction = $4, updated_at = $5, updated_by = $6, version = nextval('secret_versions') WHERE name = $1 RETURNING version::text AS version",
      [
        m.name,
        m.description,
        m.expires_at,
        m.restriction === null ? null : JSON.stringify(m.restriction),
        m.updated_at,
        m.updated_by,
      ],
    );
    return r.rows[0]!.version;
  },
  async updateSealed(db: Queryable, name: string, s: Sealed): Promise<void> {
    await db.query("UPDATE secrets SET key_id = $2, nonce = $3, ciphertext = $4, auth_tag = $5 WHERE name = $1", [
      name,
      s.keyId,
      s.nonce,
      s.ciphertext,
      s.tag,
    ]);
  },
  async remove(db: Queryable, name: string): Promise<SecretMeta | undefined> {
    return (await db.query<SecretMeta>(`DELETE FROM secrets WHERE name = $1 RETURNING ${META}`, [name])).rows[0];
  },
  /** Rows not sealed with `activeKey`, locked, a batch at a time in name order. */
  async staleForUpdate(
    db: Queryable,
    activeKey: string,
    after: string,
    limit: number,
  ): Promise<Array<Pick<SecretRow, "name" | "key_id" | "nonce" | "ciphertext" | "auth_tag">>> {
    return (
      await db.query(
        `SELECT name, ${SEALED} FROM secrets WHERE key_id <> $1 AND name > $2 ORDER BY name LIMIT $3 FOR UPDATE`,
        [activeKey, after, limit],
      )
    ).rows;
  },
  async keyUsage(db: Queryable): Promise<Array<{ key_id: string; count: number }>> {
    return (
      await db.query<{ key_id: string; count: number }>(
        "SELECT key_id, count(*)::int AS count FROM secrets GROUP BY key_id ORDER BY key_id",
      )
    ).rows;
  },
};
