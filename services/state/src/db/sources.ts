import type { Queryable } from "@orch/kit";
import type { ErrorReason, SourceAuthKind, SourceStatus } from "@orch/contracts";

/** One problem in a source's tree (file relative to the source path; line/column 1-based, 0 = unknown). */
export interface SourceFileErrorRow {
  file: string;
  line: number;
  column: number;
  /** A catalogued code (the same the API answers for the same content). */
  code: ErrorReason;
  message: string;
}

export interface SourceRow {
  name: string;
  url: string;
  branch: string;
  path: string;
  interval_s: number;
  auth_kind: SourceAuthKind;
  /** Sealed GitAuth (sources/seal.ts); null when auth_kind is none. Never leaves the service. */
  auth_sealed: Buffer | null;
  /** Sealed webhook secret. Never leaves the service. */
  webhook_sealed: Buffer;
  status: SourceStatus;
  /** The commit in force (last successful sync), "" before the first. */
  commit: string;
  synced_at: number;
  attempted_at: number;
  attempted_commit: string;
  next_sync_at: number;
  failures: number;
  error: string;
  errors: SourceFileErrorRow[];
  created_at: number;
  created_by: string;
}

/** With the counts of what it manages (list and get). */
export type SourceView = SourceRow & { module_count: number; assignment_count: number };

const COLS =
  "name, url, branch, path, interval_s, auth_kind, auth_sealed, webhook_sealed, status, commit, synced_at, attempted_at, attempted_commit, next_sync_at, failures, error, errors, created_at, created_by";
const VIEW = `SELECT ${COLS.split(", ")
  .map((c) => `s.${c}`)
  .join(", ")},
  (SELECT count(*)::int FROM modules m WHERE m.source = s.name) AS module_count,
  (SELECT count(*)::int FROM assignments a WHERE a.source = s.name) AS assignment_count
  FROM sources s`;

export const sourcesDb = {
  async insert(db: Queryable, s: SourceRow): Promise<void> {
    await db.query(
      `INSERT INTO sources (${COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
      [
        s.name,
        s.url,
        s.branch,
        s.path,
        s.interval_s,
        s.auth_kind,
        s.auth_sealed,
        s.webhook_sealed,
        s.status,
        s.commit,
        s.synced_at,
        s.attempted_at,
        s.attempted_commit,
        s.next_sync_at,
        s.failures,
        s.error,
        JSON.stringify(s.errors),
        s.created_at,
        s.created_by,
      ],
    );
  },
  async get(db: Queryable, name: string): Promise<SourceView | undefined> {
    return (await db.query<SourceView>(`${VIEW} WHERE s.name = $1`, [name])).rows[0];
  },
  /** The row locked until the transaction ends (a sync's apply, a delete). */
  async getForUpdate(db: Queryable, name: string): Promise<SourceRow | undefined> {
    return (await db.query<SourceRow>(`SELECT ${COLS} FROM sources WHERE name = $1 FOR UPDATE`, [name])).rows[0];
  },
  async page(db: Queryable, limit: number, after: string): Promise<SourceView[]> {
    return (await db.query<SourceView>(`${VIEW} WHERE s.name > $1 ORDER BY s.name LIMIT $2`, [after, limit])).rows;
  },
  /** Names of sources due for a sync at `now`, earliest first. */
  async due(db: Queryable, now: number, limit = 100): Promise<string[]> {
    return (
      await db.query<{ name: string }>(
        "SELECT name FROM sources WHERE next_sync_at <= $1 ORDER BY next_sync_at, name LIMIT $2",
        [now, limit],
      )
    ).rows.map((r) => r.name);
  },
  /** Makes the source due now (a webhook or manual sync while another replica's sync holds the lock). */
  async makeDue(db: Queryable, name: string, now: number): Promise<void> {
    await db.query("UPDATE sources SET next_sync_at = LEAST(next_sync_at, $2) WHERE name = $1", [name, now]);
  },
  /** A successful attempt: the commit is in force. */
  async recordSuccess(
    db: Queryable,
    name: string,
    r: { commit: string; now: number; next_sync_at: number },
  ): Promise<void> {
    await db.query(
      `UPDATE sources SET status = 'ok', commit = $2, synced_at = $3, attempted_at = $3, attempted_commit = $2,
         next_sync_at = $4, failures = 0, error = '', errors = '[]' WHERE name = $1`,
      [name, r.commit, r.now, r.next_sync_at],
    );
  },
  /** A failed attempt: nothing changed; the commit in force stays. */
  async recordFailure(
    db: Queryable,
    name: string,
    r: { attempted_commit: string; now: number; next_sync_at: number; error: string; errors: SourceFileErrorRow[] },
  ): Promise<void> {
    await db.query(
      `UPDATE sources SET status = 'error', attempted_at = $2, attempted_commit = $3, next_sync_at = $4,
         failures = failures + 1, error = $5, errors = $6 WHERE name = $1`,
      [name, r.now, r.attempted_commit, r.next_sync_at, r.error, JSON.stringify(r.errors)],
    );
  },
  /** Deletes the source; what it managed stays, released (no source, no commit). */
  async remove(db: Queryable, name: string): Promise<SourceRow | undefined> {
    await db.query(
      "UPDATE modules SET source = NULL, source_commit = '', removed_from_source = false WHERE source = $1",
      [name],
    );
    await db.query(
      "UPDATE assignments SET source = NULL, source_commit = '', apply_on_sync = false WHERE source = $1",
      [name],
    );
    return (await db.query<SourceRow>(`DELETE FROM sources WHERE name = $1 RETURNING ${COLS}`, [name])).rows[0];
  },
  /**
   * Marks a sync under way by pushing next_sync_at to `until` (a sync that dies is retried then).
   * A makeDue while it runs pulls the value back below `until`: the sync's end sees the request.
   */
  async claim(db: Queryable, name: string, until: number): Promise<void> {
    await db.query("UPDATE sources SET next_sync_at = $2 WHERE name = $1", [name, until]);
  },
};
