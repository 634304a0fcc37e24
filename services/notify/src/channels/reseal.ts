import { withTx, type Logger, type Pool } from "@orch/kit";
import type { CredentialBox } from "./crypto.js";

export interface ResealResult {
  resealed: number;
  /** Channel ids whose credentials no configured key opens (left as they are). */
  unreadable: string[];
}

/**
 * Moves every channel's credentials to the active key at start: rows stored in clear before
 * encryption was mandatory, rows sealed with the old single key, and rows sealed with an older
 * keyring key (so a rotated-out key can be removed after one restart). One transaction with the
 * rows locked, so concurrent replicas starting together re-seal each row once.
 */
export async function resealCredentials(pool: Pool, box: CredentialBox, log: Logger): Promise<ResealResult> {
  const result = await withTx(pool, async (c) => {
    const sql = "SELECT id, credentials FROM channels ORDER BY id FOR UPDATE";
    const rows = (await c.query<{ id: string; credentials: Buffer }>(sql)).rows;
    const out: ResealResult = { resealed: 0, unreadable: [] };
    for (const row of rows) {
      if (box.current(row.credentials)) continue;
      let creds: Record<string, unknown>;
      try {
        creds = box.open(row.id, row.credentials);
      } catch {
        // A missing key or a damaged blob: this channel stays as it is, the others still move.
        out.unreadable.push(row.id);
        continue;
      }
      await c.query("UPDATE channels SET credentials = $2 WHERE id = $1", [row.id, box.seal(row.id, creds)]);
      out.resealed++;
    }
    return out;
  });
  if (result.resealed) {
    const fields = { channels: result.resealed, active_key: box.activeKey };
    log.info(fields, "channel credentials re-sealed with the active key");
  }
  if (result.unreadable.length) {
    const msg =
      "channel credentials sealed with a key that is not in notify.credentials_keys; " +
      "their deliveries fail until it is added back";
    log.error({ channels: result.unreadable }, msg);
  }
  return result;
}
