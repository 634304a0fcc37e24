import type { Queryable } from "@orch/kit";

export interface RequestRow {
  id: string;
  action: string;
  status: string;
  policy: string;
  approvals_required: number;
  approvers: string[];
  requester_may_approve: boolean;
  requester_id: string;
  requester_name: string;
  target_type: string;
  target_name: string;
  summary: string;
  reason: string;
  content: Record<string, unknown>;
  content_hash: string;
  created_at: number;
  expires_at: number;
  decided_at: number | null;
  executed_at: number | null;
  result: string;
  error: string;
}

export interface DecisionRow {
  request_id: string;
  operator_id: string;
  operator_name: string;
  decision: "approve" | "deny";
  comment: string;
  at: number;
}

const COLS =
  "id, action, status, policy, approvals_required, approvers, requester_may_approve, requester_id, requester_name, target_type, target_name, summary, reason, content, content_hash, created_at, expires_at, decided_at, executed_at, result, error";

export interface RequestFilter {
  status: string;
  /** Only requests of this requester. */
  requesterId: string;
  /** Only pending requests this operator has not decided yet and `approverTokens` makes it eligible for. */
  undecidedBy: string;
  /** The caller's approver strings (`operator:<name>`, `role:<role>`, `group:<g>`). */
  approverTokens: string[];
  after: string;
  limit: number;
}

export const requestsDb = {
  async byId(db: Queryable, id: string, lock = false): Promise<RequestRow | undefined> {
    const q = `SELECT ${COLS} FROM change_requests WHERE id = $1${lock ? " FOR UPDATE" : ""}`;
    return (await db.query<RequestRow>(q, [id])).rows[0];
  },
  async insert(db: Queryable, r: RequestRow): Promise<void> {
    const values = COLS.split(", ").map((c) =>
      c === "content" ? JSON.stringify(r.content) : r[c as keyof RequestRow],
    );
    const marks = values.map((_v, i) => `$${i + 1}`).join(", ");
    await db.query(`INSERT INTO change_requests (${COLS}) VALUES (${marks})`, values);
  },
  /** Newest first: ids are ULIDs, so the cursor is the last id of the previous page. */
  async page(db: Queryable, f: RequestFilter): Promise<RequestRow[]> {
    const q = `SELECT ${COLS} FROM change_requests
      WHERE ($1 = '' OR status = $1) AND ($2 = '' OR requester_id = $2) AND ($3 = '' OR id < $3)
        AND ($4 = '' OR (status = 'pending' AND NOT EXISTS (
          SELECT 1 FROM change_request_decisions d WHERE d.request_id = change_requests.id AND d.operator_id = $4)
          AND approvers && $6::text[] AND (requester_may_approve OR requester_id <> $4)))
      ORDER BY id DESC LIMIT $5`;
    const values = [f.status, f.requesterId, f.after, f.undecidedBy, f.limit, f.approverTokens];
    return (await db.query<RequestRow>(q, values)).rows;
  },
  async decisions(db: Queryable, ids: string[]): Promise<DecisionRow[]> {
    const q =
      "SELECT request_id, operator_id, operator_name, decision, comment, at FROM change_request_decisions WHERE request_id = ANY($1) ORDER BY at, operator_name";
    return (await db.query<DecisionRow>(q, [ids])).rows;
  },
  async addDecision(db: Queryable, d: DecisionRow): Promise<void> {
    await db.query(
      "INSERT INTO change_request_decisions (request_id, operator_id, operator_name, decision, comment, at) VALUES ($1, $2, $3, $4, $5, $6)",
      [d.request_id, d.operator_id, d.operator_name, d.decision, d.comment, d.at],
    );
  },
  async setStatus(
    db: Queryable,
    id: string,
    s: Pick<RequestRow, "status"> & Partial<Pick<RequestRow, "decided_at" | "executed_at" | "result" | "error">>,
  ): Promise<void> {
    await db.query(
      `UPDATE change_requests SET status = $2, decided_at = COALESCE($3, decided_at),
         executed_at = COALESCE($4, executed_at), result = COALESCE($5, result), error = COALESCE($6, error)
       WHERE id = $1`,
      [id, s.status, s.decided_at ?? null, s.executed_at ?? null, s.result ?? null, s.error ?? null],
    );
  },
  /**
   * A pending request frozen again: its new content, hash and summary. The approvals given for the
   * old content no longer count: they are removed, and their approvers' names returned.
   */
  async replan(
    db: Queryable,
    id: string,
    r: Pick<RequestRow, "content" | "content_hash" | "summary">,
  ): Promise<string[]> {
    await db.query("UPDATE change_requests SET content = $2, content_hash = $3, summary = $4 WHERE id = $1", [
      id,
      JSON.stringify(r.content),
      r.content_hash,
      r.summary,
    ]);
    const cleared = await db.query<{ operator_name: string }>(
      "DELETE FROM change_request_decisions WHERE request_id = $1 AND decision = 'approve' RETURNING operator_name",
      [id],
    );
    return cleared.rows.map((x) => x.operator_name).sort();
  },
  /** Pending requests past their expiry, locked and skipping rows a decision holds. */
  async expiredPending(db: Queryable, now: number, limit = 500): Promise<RequestRow[]> {
    const q = `SELECT ${COLS} FROM change_requests WHERE status = 'pending' AND expires_at <= $1
      ORDER BY expires_at LIMIT $2 FOR UPDATE SKIP LOCKED`;
    return (await db.query<RequestRow>(q, [now, limit])).rows;
  },
};
