import type { Queryable } from "@orch/kit";
import type { MappingRule } from "./mapping.js";

export interface ProviderRow {
  id: string;
  name: string;
  display_name: string;
  issuer: string;
  client_id: string;
  /** Sealed with the SSO keyring, the provider id as associated data. */
  client_secret: Buffer | null;
  scopes: string[];
  groups_claim: string;
  allowed_domains: string[];
  rules: MappingRule[];
  refresh_interval_seconds: number;
  enabled: boolean;
  device_flow: boolean;
  created_at: number;
  updated_at: number;
  created_by: string;
}

const COLS =
  "id, name, display_name, issuer, client_id, client_secret, scopes, groups_claim, allowed_domains, rules, refresh_interval_seconds, enabled, device_flow, created_at, updated_at, created_by";

export const providersDb = {
  async list(db: Queryable): Promise<ProviderRow[]> {
    return (await db.query<ProviderRow>(`SELECT ${COLS} FROM identity_providers ORDER BY name`)).rows;
  },
  async byName(db: Queryable, name: string, forUpdate = false): Promise<ProviderRow | undefined> {
    const lock = forUpdate ? " FOR UPDATE" : "";
    return (await db.query<ProviderRow>(`SELECT ${COLS} FROM identity_providers WHERE name = $1${lock}`, [name]))
      .rows[0];
  },
  async byId(db: Queryable, id: string): Promise<ProviderRow | undefined> {
    return (await db.query<ProviderRow>(`SELECT ${COLS} FROM identity_providers WHERE id = $1`, [id])).rows[0];
  },
  async upsert(db: Queryable, p: ProviderRow): Promise<ProviderRow> {
    const sql = `INSERT INTO identity_providers (${COLS})
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10::jsonb, $11, $12, $13, $14, $15, $16)
      ON CONFLICT (id) DO UPDATE SET display_name = EXCLUDED.display_name, issuer = EXCLUDED.issuer,
        client_id = EXCLUDED.client_id, client_secret = EXCLUDED.client_secret, scopes = EXCLUDED.scopes,
        groups_claim = EXCLUDED.groups_claim, allowed_domains = EXCLUDED.allowed_domains, rules = EXCLUDED.rules,
        refresh_interval_seconds = EXCLUDED.refresh_interval_seconds, enabled = EXCLUDED.enabled,
        device_flow = EXCLUDED.device_flow, updated_at = EXCLUDED.updated_at
      RETURNING ${COLS}`;
    const values = [
      p.id,
      p.name,
      p.display_name,
      p.issuer,
      p.client_id,
      p.client_secret,
      p.scopes,
      p.groups_claim,
      p.allowed_domains,
      JSON.stringify(p.rules),
      p.refresh_interval_seconds,
      p.enabled,
      p.device_flow,
      p.created_at,
      p.updated_at,
      p.created_by,
    ];
    return (await db.query<ProviderRow>(sql, values)).rows[0]!;
  },
  async remove(db: Queryable, id: string): Promise<void> {
    await db.query("DELETE FROM identity_providers WHERE id = $1", [id]);
  },
};
