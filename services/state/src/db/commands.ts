import type { CommandRunStatus, CommandTargetStatus } from "@orch/contracts";
import type { Queryable } from "@orch/kit";

export interface CommandRunRow {
  id: string;
  status: CommandRunStatus;
  selector: string | null;
  node_ids: string[] | null;
  argv: string[] | null;
  script: string | null;
  env_keys: string[];
  timeout_s: number;
  batch: string;
  batch_size: number;
  batches: number;
  max_failures: number | null;
  maintenance_window: string | null;
  actor_id: string;
  actor_name: string;
  cancelled_by: string | null;
  created_at: number;
  updated_at: number;
  finished_at: number | null;
  /** The approved change request this run executes (command.run), if any. */
  change_request_id?: string | null;
}

export interface CommandTargetRow {
  run_id: string;
  seq: number;
  node_id: string;
  name: string;
  batch: number;
  status: CommandTargetStatus;
  job_id: string | null;
  exit_code: number | null;
  signal: string;
  started_at: number | null;
  finished_at: number | null;
  duration_ms: number | null;
  stdout: Buffer;
  stderr: Buffer;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
  error: string;
}

/** How a target ended (everything the driver stores in one update). */
export interface TargetEnd {
  status: CommandTargetStatus;
  exit_code: number | null;
  signal: string;
  finished_at: number;
  duration_ms: number | null;
  stdout: Uint8Array;
  stderr: Uint8Array;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
  error: string;
}

const RUN_COLS =
  "id, status, selector, node_ids, argv, script, env_keys, timeout_s, batch, batch_size, batches, max_failures, maintenance_window, actor_id, actor_name, cancelled_by, created_at, updated_at, finished_at, change_request_id";
const TARGET_COLS =
  "run_id, seq, node_id, name, batch, status, job_id, exit_code, signal, started_at, finished_at, duration_ms, stdout_truncated, stderr_truncated, error";
const LIVE = "('running', 'cancelling')";

export type Counts = Map<string, Map<string, number>>;

export interface RunFilter {
  status: string;
  /** Only runs started by this actor (an operator sees its own runs). */
  actor_id: string;
}

export const commandRunsDb = {
  async insert(db: Queryable, r: CommandRunRow, targets: readonly CommandTargetRow[]): Promise<void> {
    await db.query(
      `INSERT INTO command_runs (${RUN_COLS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20)`,
      [
        r.id,
        r.status,
        r.selector,
        r.node_ids === null ? null : JSON.stringify(r.node_ids),
        r.argv === null ? null : JSON.stringify(r.argv),
        r.script,
        r.env_keys,
        r.timeout_s,
        r.batch,
        r.batch_size,
        r.batches,
        r.max_failures,
        r.maintenance_window,
        r.actor_id,
        r.actor_name,
        r.cancelled_by,
        r.created_at,
        r.updated_at,
        r.finished_at,
        r.change_request_id ?? null,
      ],
    );
    // Column arrays keep a 10 000-target insert to a handful of statements.
    for (let i = 0; i < targets.length; i += 5000) {
      const part = targets.slice(i, i + 5000);
      await db.query(
        `INSERT INTO command_targets (run_id, seq, node_id, name, batch, status, job_id)
         SELECT $1, * FROM unnest($2::int[], $3::text[], $4::text[], $5::int[], $6::text[], $7::text[])`,
        [
          r.id,
          part.map((t) => t.seq),
          part.map((t) => t.node_id),
          part.map((t) => t.name),
          part.map((t) => t.batch),
          part.map((t) => t.status),
          part.map((t) => t.job_id),
        ],
      );
    }
  },

  async get(db: Queryable, id: string, forUpdate = false): Promise<CommandRunRow | undefined> {
    return (
      await db.query<CommandRunRow>(
        `SELECT ${RUN_COLS} FROM command_runs WHERE id = $1${forUpdate ? " FOR UPDATE" : ""}`,
        [id],
      )
    ).rows[0];
  },

  /** The run an approved change request started, if it did (the column is unique). */
  async byChangeRequest(db: Queryable, changeRequestId: string): Promise<CommandRunRow | undefined> {
    return (
      await db.query<CommandRunRow>(`SELECT ${RUN_COLS} FROM command_runs WHERE change_request_id = $1`, [
        changeRequestId,
      ])
    ).rows[0];
  },

  /** Newest first (ULID ids sort by creation); `before` is the last id of the previous page. */
  async page(db: Queryable, f: RunFilter, limit: number, before: string): Promise<CommandRunRow[]> {
    return (
      await db.query<CommandRunRow>(
        `SELECT ${RUN_COLS} FROM command_runs
         WHERE ($1 = '' OR status = $1) AND ($2 = '' OR actor_id = $2) AND ($3 = '' OR id < $3)
         ORDER BY id DESC LIMIT $4`,
        [f.status, f.actor_id, before, limit],
      )
    ).rows;
  },

  async targets(db: Queryable, runId: string, withOutput: boolean): Promise<CommandTargetRow[]> {
    const cols = withOutput ? `${TARGET_COLS}, stdout, stderr` : TARGET_COLS;
    const rows = (
      await db.query<CommandTargetRow>(`SELECT ${cols} FROM command_targets WHERE run_id = $1 ORDER BY seq`, [runId])
    ).rows;
    if (!withOutput) for (const r of rows) Object.assign(r, { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) });
    return rows;
  },

  /** Targets per status of each run. */
  async counts(db: Queryable, runIds: readonly string[]): Promise<Counts> {
    const out: Counts = new Map(runIds.map((id) => [id, new Map()]));
    if (!runIds.length) return out;
    const r = await db.query<{ run_id: string; status: string; n: number }>(
      "SELECT run_id, status, count(*)::int AS n FROM command_targets WHERE run_id = ANY($1) GROUP BY run_id, status",
      [runIds],
    );
    for (const row of r.rows) out.get(row.run_id)?.set(row.status, row.n);
    return out;
  },

  /**
   * Queued targets → running, in one statement; returns the seqs that changed. A target missing
   * from the answer is no longer queued (a cancel made it not_started) and must not launch.
   */
  async markRunning(db: Queryable, runId: string, seqs: readonly number[], now: number): Promise<Set<number>> {
    const r = await db.query<{ seq: number }>(
      "UPDATE command_targets SET status = 'running', started_at = $3 WHERE run_id = $1 AND seq = ANY($2) AND status = 'queued' RETURNING seq",
      [runId, seqs, now],
    );
    return new Set(r.rows.map((x) => x.seq));
  },

  async endTarget(db: Queryable, runId: string, seq: number, e: TargetEnd): Promise<void> {
    await db.query(
      `UPDATE command_targets SET status = $3, exit_code = $4, signal = $5, finished_at = $6, duration_ms = $7,
         stdout = $8, stderr = $9, stdout_truncated = $10, stderr_truncated = $11, error = $12
       WHERE run_id = $1 AND seq = $2 AND status = 'running'`,
      [
        runId,
        seq,
        e.status,
        e.exit_code,
        e.signal,
        e.finished_at,
        e.duration_ms,
        Buffer.from(e.stdout.buffer, e.stdout.byteOffset, e.stdout.byteLength),
        Buffer.from(e.stderr.buffer, e.stderr.byteOffset, e.stderr.byteLength),
        e.stdout_truncated,
        e.stderr_truncated,
        e.error,
      ],
    );
  },

  /** Queued targets that will never launch (the run stopped or was cancelled). */
  async notStarted(db: Queryable, runId: string): Promise<CommandTargetRow[]> {
    const r = await db.query<CommandTargetRow>(
      `UPDATE command_targets SET status = 'not_started' WHERE run_id = $1 AND status = 'queued' RETURNING ${TARGET_COLS}`,
      [runId],
    );
    for (const t of r.rows) Object.assign(t, { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0) });
    return r.rows;
  },

  async running(db: Queryable, runId: string): Promise<Array<{ node_id: string; job_id: string }>> {
    return (
      await db.query<{ node_id: string; job_id: string }>(
        "SELECT node_id, job_id FROM command_targets WHERE run_id = $1 AND status = 'running'",
        [runId],
      )
    ).rows;
  },

  async touch(db: Queryable, id: string, now: number): Promise<void> {
    await db.query(`UPDATE command_runs SET updated_at = $2 WHERE id = $1 AND status IN ${LIVE}`, [id, now]);
  },

  async cancelling(db: Queryable, id: string, by: string, now: number): Promise<void> {
    await db.query("UPDATE command_runs SET status = 'cancelling', cancelled_by = $2, updated_at = $3 WHERE id = $1", [
      id,
      by,
      now,
    ]);
  },

  /** Ends a live run; a cancelling run always ends cancelled. Returns the final row, or undefined when already ended. */
  async end(db: Queryable, id: string, status: CommandRunStatus, now: number): Promise<CommandRunRow | undefined> {
    return (
      await db.query<CommandRunRow>(
        `UPDATE command_runs SET status = CASE WHEN status = 'cancelling' THEN 'cancelled' ELSE $2 END,
           finished_at = $3, updated_at = $3
         WHERE id = $1 AND status IN ${LIVE} RETURNING ${RUN_COLS}`,
        [id, status, now],
      )
    ).rows[0];
  },

  /** Live runs whose replica stopped beating (the sweeper holds its job lock). */
  async staleIds(db: Queryable, aliveSince: number): Promise<string[]> {
    return (
      await db.query<{ id: string }>(
        `SELECT id FROM command_runs WHERE status IN ${LIVE} AND updated_at < $1 ORDER BY updated_at LIMIT 1000`,
        [aliveSince],
      )
    ).rows.map((r) => r.id);
  },

  /** A run nobody drives any more (its replica died). */
  async interrupt(db: Queryable, id: string, now: number): Promise<CommandRunRow | undefined> {
    return (
      await db.query<CommandRunRow>(
        `UPDATE command_runs SET status = 'interrupted', finished_at = $2, updated_at = $2
         WHERE id = $1 AND status IN ${LIVE} RETURNING ${RUN_COLS}`,
        [id, now],
      )
    ).rows[0];
  },

  /** A dead driver's targets: running → lost (no answer will be stored), queued → not_started. */
  async abandonTargets(db: Queryable, runId: string, now: number): Promise<void> {
    await db.query(
      `UPDATE command_targets SET
         status = CASE WHEN status = 'running' THEN 'lost' ELSE 'not_started' END,
         finished_at = CASE WHEN status = 'running' THEN $2 ELSE finished_at END,
         error = CASE WHEN status = 'running' THEN 'the state service replica driving the run stopped' ELSE error END
       WHERE run_id = $1 AND status IN ('queued', 'running')`,
      [runId, now],
    );
  },
};
