import type { Queryable } from "@orch/kit";

export type OperationKind = "apply" | "plan" | "drift";
export type OperationStatus = "pending" | "running" | "succeeded" | "failed" | "timed_out" | "unreachable";
export const OPEN_STATUSES: readonly OperationStatus[] = ["pending", "running"];
export const FAILED_STATUSES: readonly OperationStatus[] = ["failed", "timed_out", "unreachable"];

export interface Summary {
  ok: number;
  changed: number;
  failed: number;
  skipped: number;
  unsupported: number;
}
export const emptySummary = (): Summary => ({ ok: 0, changed: 0, failed: 0, skipped: 0, unsupported: 0 });

/** One resource's stored result; secret values are masked before it is written. */
export interface StoredResult {
  id: string;
  module: string;
  type: string;
  status: string;
  changed: boolean;
  diff: string;
  message: string;
  duration_ms: number;
  has_output: boolean;
}

export interface StoredOutput {
  id: string;
  module: string;
  stdout: string;
  stderr: string;
}

export interface OperationRow {
  id: string;
  node_id: string;
  node_name: string;
  kind: OperationKind;
  modules: string[];
  status: OperationStatus;
  actor_id: string;
  actor_name: string;
  created_at: number;
  started_at: number | null;
  finished_at: number | null;
  deadline: number;
  summary: Summary;
  results: StoredResult[];
  output: StoredOutput[];
  error_code: string;
  error: string;
  run_id: string | null;
  assignment: string;
  /** Enforcement: the drift record this apply corrects. */
  remediates: string | null;
  /** The approved change request this apply executes (docs/approvals.md). */
  change_request_id: string | null;
}

export type NewOperation = Pick<
  OperationRow,
  | "id"
  | "node_id"
  | "node_name"
  | "kind"
  | "modules"
  | "actor_id"
  | "actor_name"
  | "created_at"
  | "deadline"
  | "run_id"
  | "assignment"
  | "remediates"
  | "change_request_id"
>;

export interface Finish {
  status: OperationStatus;
  finished_at: number;
  summary?: Summary;
  results?: StoredResult[];
  output?: StoredOutput[];
  error_code?: string;
  error?: string;
}

const COLS =
  "id, node_id, node_name, kind, modules, status, actor_id, actor_name, created_at, started_at, finished_at, deadline, summary, results, output, error_code, error, run_id, assignment, remediates, change_request_id";
/** Lists skip the heavy columns. */
const LIST_COLS =
  "id, node_id, node_name, kind, modules, status, actor_id, actor_name, created_at, started_at, finished_at, deadline, summary, '[]'::jsonb AS results, '[]'::jsonb AS output, error_code, error, run_id, assignment, remediates, change_request_id";
/** A list with results (a run's page): still without the captured output, fetched one operation at a time. */
const LIST_COLS_RESULTS =
  "id, node_id, node_name, kind, modules, status, actor_id, actor_name, created_at, started_at, finished_at, deadline, summary, results, '[]'::jsonb AS output, error_code, error, run_id, assignment, remediates, change_request_id";

/** finishMany's answer: every column, results and output only when nothing was written to them. */
const RETURN_LEAN = COLS.split(", ")
  .map((c) =>
    c === "results" || c === "output" ? `CASE WHEN x.${c} IS NULL THEN o.${c} ELSE '[]'::jsonb END AS ${c}` : `o.${c}`,
  )
  .join(", ");

export interface OperationFilter {
  node_id?: string;
  /** Only these nodes (a scoped operator's reachable agents). */
  node_ids?: string[];
  kind?: string;
  status?: string;
  run_id?: string;
}

export const operationsDb = {
  async insertMany(db: Queryable, ops: NewOperation[]): Promise<void> {
    if (ops.length === 0) return;
    await db.query(
      `INSERT INTO operations (id, node_id, node_name, kind, modules, status, actor_id, actor_name, created_at, deadline, run_id, assignment, remediates, change_request_id)
       SELECT id, node_id, node_name, kind, modules, 'pending', actor_id, actor_name, created_at, deadline, run_id, assignment, remediates, change_request_id
         FROM jsonb_to_recordset($1::jsonb) AS x(id text, node_id text, node_name text, kind text, modules text[], actor_id text, actor_name text,
                                                   created_at bigint, deadline bigint, run_id text, assignment text, remediates text,
                                                   change_request_id text)`,
      [JSON.stringify(ops)],
    );
  },
  async get(db: Queryable, id: string): Promise<OperationRow | undefined> {
    return (await db.query<OperationRow>(`SELECT ${COLS} FROM operations WHERE id = $1`, [id])).rows[0];
  },
  /** The operation an approved change request started, if it started one. */
  async byChangeRequest(db: Queryable, changeRequestId: string): Promise<OperationRow | undefined> {
    return (
      await db.query<OperationRow>(`SELECT ${COLS} FROM operations WHERE change_request_id = $1`, [changeRequestId])
    ).rows[0];
  },
  /** Newest first; `before` is the id of the last row of the previous page. */
  async page(
    db: Queryable,
    f: OperationFilter,
    limit: number,
    before: string,
    withResults = false,
  ): Promise<OperationRow[]> {
    const where: string[] = [];
    const args: unknown[] = [];
    const add = (sql: string, v: unknown) => {
      args.push(v);
      where.push(sql.replace("?", `$${args.length}`));
    };
    if (before) add("id < ?", before);
    if (f.node_id) add("node_id = ?", f.node_id);
    if (f.node_ids) add("node_id = ANY(?)", f.node_ids);
    if (f.kind) add("kind = ?", f.kind);
    if (f.status) add("status = ?", f.status);
    if (f.run_id) add("run_id = ?", f.run_id);
    args.push(limit);
    return (
      await db.query<OperationRow>(
        `SELECT ${withResults ? LIST_COLS_RESULTS : LIST_COLS} FROM operations ${where.length ? `WHERE ${where.join(" AND ")}` : ""} ORDER BY id DESC LIMIT $${args.length}`,
        args,
      )
    ).rows;
  },
  /**
   * pending → running with a fresh deadline (a fan-out's queued operations wait for a slot);
   * false when the operation already ended (e.g. swept as timed out).
   */
  async markRunning(db: Queryable, id: string, now: number, deadline: number): Promise<boolean> {
    const r = await db.query(
      "UPDATE operations SET status = 'running', started_at = $2, deadline = $3 WHERE id = $1 AND status = 'pending'",
      [id, now, deadline],
    );
    return r.rowCount === 1;
  },
  /** markRunning of several operations in one statement; returns the ids that went pending → running. */
  async markRunningMany(
    db: Queryable,
    items: ReadonlyArray<{ id: string; now: number; deadline: number }>,
  ): Promise<Set<string>> {
    const r = await db.query<{ id: string }>(
      `UPDATE operations o SET status = 'running', started_at = x.now, deadline = x.deadline
         FROM unnest($1::text[], $2::bigint[], $3::bigint[]) AS x(id, now, deadline)
        WHERE o.id = x.id AND o.status = 'pending' RETURNING o.id`,
      [items.map((i) => i.id), items.map((i) => i.now), items.map((i) => i.deadline)],
    );
    return new Set(r.rows.map((row) => row.id));
  },
  /**
   * finish of several operations in one statement (each id at most once); returns the rows that
   * ended now: an operation that had already ended is left alone and missing (first writer wins).
   */
  async finishMany(db: Queryable, items: ReadonlyArray<{ id: string; f: Finish }>): Promise<OperationRow[]> {
    const rows = items.map(({ id, f }) => ({
      id,
      status: f.status,
      finished_at: f.finished_at,
      // Absent keys are NULL: COALESCE keeps what the row holds.
      summary: f.summary,
      results: f.results,
      output: f.output,
      error_code: f.error_code ?? "",
      error: f.error ?? "",
    }));
    const r = await db.query<OperationRow>(
      `UPDATE operations o SET status = x.status, finished_at = x.finished_at, summary = COALESCE(x.summary, o.summary),
              results = COALESCE(x.results, o.results), output = COALESCE(x.output, o.output), error_code = x.error_code, error = x.error
         FROM jsonb_to_recordset($1::jsonb) AS x(id text, status text, finished_at bigint, summary jsonb, results jsonb, output jsonb,
                                                error_code text, error text)
        WHERE o.id = x.id AND o.status IN ('pending', 'running') RETURNING ${RETURN_LEAN}`,
      [JSON.stringify(rows)],
    );
    // The heavy columns are what was just written (or the defaults of an operation that never ran):
    // not read back, parsing them again would cost more than writing them.
    const byId = new Map(items.map((i) => [i.id, i.f]));
    return r.rows.map((row) => {
      const f = byId.get(row.id)!;
      return { ...row, results: f.results ?? row.results, output: f.output ?? row.output };
    });
  },
  /** Ends an open operation; undefined when it had already ended (first writer wins). */
  async finish(db: Queryable, id: string, f: Finish): Promise<OperationRow | undefined> {
    const r = await db.query<OperationRow>(
      `UPDATE operations SET status = $2, finished_at = $3, summary = COALESCE($4::jsonb, summary), results = COALESCE($5::jsonb, results),
              output = COALESCE($6::jsonb, output), error_code = $7, error = $8
        WHERE id = $1 AND status IN ('pending', 'running') RETURNING ${COLS}`,
      [
        id,
        f.status,
        f.finished_at,
        f.summary ? JSON.stringify(f.summary) : null,
        f.results ? JSON.stringify(f.results) : null,
        f.output ? JSON.stringify(f.output) : null,
        f.error_code ?? "",
        f.error ?? "",
      ],
    );
    return r.rows[0];
  },
  /**
   * Open operations past their deadline (the sweeper runs under a job lock). Queued operations of a fan-out
   * whose replica is alive (recent heartbeat) are left alone: they get a fresh deadline when they start.
   */
  async stale(db: Queryable, now: number, aliveSince: number, limit: number): Promise<OperationRow[]> {
    return (
      await db.query<OperationRow>(
        `SELECT ${LIST_COLS} FROM operations o
          WHERE o.status IN ('pending', 'running') AND o.deadline < $1
            AND NOT (o.status = 'pending' AND o.run_id IS NOT NULL
                     AND EXISTS (SELECT 1 FROM runs r WHERE r.id = o.run_id AND r.status = 'running' AND r.updated_at > $2))
          ORDER BY o.deadline LIMIT $3`,
        [now, aliveSince, limit],
      )
    ).rows;
  },
  async ofRun(db: Queryable, runId: string): Promise<Array<Pick<OperationRow, "id" | "node_id" | "status">>> {
    return (
      await db.query<Pick<OperationRow, "id" | "node_id" | "status">>(
        "SELECT id, node_id, status FROM operations WHERE run_id = $1",
        [runId],
      )
    ).rows;
  },
};
