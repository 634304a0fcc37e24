import type { Queryable } from "@orch/kit";

export interface RunTargetRow {
  node_id: string;
  name: string;
  batch: number;
}

export type RunStatus = "running" | "completed" | "stopped" | "interrupted";

export interface RunRow {
  id: string;
  assignment: string;
  kind: "apply" | "plan";
  status: RunStatus;
  selector: string;
  modules: string[];
  batch_size: number;
  batches: number;
  max_failures: number | null;
  failures: number;
  targets: RunTargetRow[];
  actor_id: string;
  actor_name: string;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
  /** The git source whose sync or plan started the run, and its commit ("" otherwise). */
  source: string;
  source_commit: string;
  /** The approved change request this apply carries out (null otherwise). */
  change_request_id: string | null;
}

/** What a run's progress needs: its head, its number of targets and its operations counted by status. */
export interface RunTally {
  id: string;
  assignment: string;
  kind: string;
  status: RunStatus;
  targets: number;
  /** Operations of the run by status. */
  operations: Record<string, number>;
}

const COLS =
  "id, assignment, kind, status, selector, modules, batch_size, batches, max_failures, failures, targets, actor_id, actor_name, created_at, updated_at, finished_at, source, source_commit, change_request_id";

export const runsDb = {
  async insert(db: Queryable, r: RunRow): Promise<void> {
    await db.query(
      `INSERT INTO runs (${COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
      [
        r.id,
        r.assignment,
        r.kind,
        r.status,
        r.selector,
        r.modules,
        r.batch_size,
        r.batches,
        r.max_failures,
        r.failures,
        JSON.stringify(r.targets),
        r.actor_id,
        r.actor_name,
        r.created_at,
        r.updated_at,
        r.finished_at,
        r.source,
        r.source_commit,
        r.change_request_id,
      ],
    );
  },
  async get(db: Queryable, id: string): Promise<RunRow | undefined> {
    return (await db.query<RunRow>(`SELECT ${COLS} FROM runs WHERE id = $1`, [id])).rows[0];
  },
  async byChangeRequest(db: Queryable, changeRequestId: string): Promise<RunRow | undefined> {
    return (await db.query<RunRow>(`SELECT ${COLS} FROM runs WHERE change_request_id = $1`, [changeRequestId])).rows[0];
  },
  /**
   * A run's progress counted by Postgres: the targets list and every operation row stay in the
   * database instead of being shipped and parsed for a handful of counts.
   */
  async tally(db: Queryable, id: string): Promise<RunTally | undefined> {
    return (
      await db.query<RunTally>(
        `SELECT r.id, r.assignment, r.kind, r.status, jsonb_array_length(r.targets) AS targets,
                (SELECT COALESCE(jsonb_object_agg(o.status, o.n), '{}'::jsonb)
                   FROM (SELECT status, count(*)::int AS n FROM operations WHERE run_id = r.id GROUP BY status) o) AS operations
           FROM runs r WHERE r.id = $1`,
        [id],
      )
    ).rows[0];
  },
  /** One assignment's runs, newest first (ULID ids sort by creation); `before` is the last id of the previous page. */
  async page(db: Queryable, assignment: string, limit: number, before: string): Promise<RunRow[]> {
    return (
      await db.query<RunRow>(
        `SELECT ${COLS} FROM runs WHERE assignment = $1 AND ($2 = '' OR id < $2) ORDER BY id DESC LIMIT $3`,
        [assignment, before, limit],
      )
    ).rows;
  },
  /** Heartbeat and failure count of a live run. */
  async touch(db: Queryable, id: string, now: number, failures?: number): Promise<void> {
    await db.query(
      "UPDATE runs SET updated_at = $2, failures = COALESCE($3, failures) WHERE id = $1 AND status = 'running'",
      [id, now, failures ?? null],
    );
  },
  async end(db: Queryable, id: string, status: RunStatus, now: number, failures: number): Promise<void> {
    await db.query(
      "UPDATE runs SET status = $2, finished_at = $3, updated_at = $3, failures = $4 WHERE id = $1 AND status = 'running'",
      [id, status, now, failures],
    );
  },
  /** Runs whose replica stopped beating: nothing will launch their remaining batches. */
  async interruptStale(db: Queryable, aliveSince: number, now: number): Promise<string[]> {
    const r = await db.query<{ id: string }>(
      "UPDATE runs SET status = 'interrupted', finished_at = $2, updated_at = $2 WHERE status = 'running' AND updated_at < $1 RETURNING id",
      [aliveSince, now],
    );
    return r.rows.map((x) => x.id);
  },
};
