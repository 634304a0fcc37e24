import type { JsonObject } from "@bufbuild/protobuf";
import type { Queryable } from "@orch/kit";
import { ID_TIME_SKEW_MS, ulidFloor } from "../ulid-time.js";
import type { Filter } from "../validate.js";
import { EVENT_COLUMNS, listQuery, tailQuery } from "./query.js";

export interface EventRow {
  id: string;
  ts: number;
  event_type: string;
  severity: string;
  summary: string;
  actor_id: string;
  actor_name: string;
  actor_type: string;
  target_id: string;
  target_name: string;
  target_type: string;
  metadata: JsonObject;
}

/** Every insert takes this lock until commit, so `seq` order is commit order. */
const INGEST_LOCK = "orch.audit.ingest";

const INSERT_SQL = `INSERT INTO events (${EVENT_COLUMNS})
  SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::jsonb[])
  ON CONFLICT (id) DO NOTHING
  RETURNING id, seq`;

export const eventsDb = {
  /** Serialises writers until the transaction ends (re-entrant within it). */
  async lockIngest(tx: Queryable): Promise<void> {
    await tx.query("SELECT pg_advisory_xact_lock(hashtext($1))", [INGEST_LOCK]);
  },

  async head(db: Queryable): Promise<number> {
    return Number(
      (await db.query<{ head: number }>("SELECT coalesce(max(seq), 0) AS head FROM events")).rows[0]?.head ?? 0,
    );
  },

  /**
   * Inserts rows idempotently (a known id is skipped) and returns the newly stored ones with their
   * seq. Must run inside a transaction: the ingest lock is held until it commits.
   */
  async insert(tx: Queryable, rows: EventRow[]): Promise<Array<{ id: string; seq: number }>> {
    if (rows.length === 0) return [];
    await eventsDb.lockIngest(tx);
    const col = <K extends keyof EventRow>(k: K) => rows.map((r) => r[k]);
    const res = await tx.query<{ id: string; seq: number }>(INSERT_SQL, [
      col("id"),
      col("ts"),
      col("event_type"),
      col("severity"),
      col("summary"),
      col("actor_id"),
      col("actor_name"),
      col("actor_type"),
      col("target_id"),
      col("target_name"),
      col("target_type"),
      rows.map((r) => JSON.stringify(r.metadata)),
    ]);
    return res.rows.map((r) => ({ id: r.id, seq: Number(r.seq) }));
  },

  /** One page newest first; fetches limit + 1 rows so the caller knows whether more exist. */
  async page(db: Queryable, f: Filter, cursor: string | undefined, limit: number): Promise<EventRow[]> {
    const q = listQuery(f, cursor, limit + 1);
    return (await db.query<EventRow>(q.text, q.values)).rows;
  },

  async tail(
    db: Queryable,
    f: Filter,
    position: number,
    limit: number,
  ): Promise<{ head: number; rows: Array<EventRow & { seq: number }> }> {
    const q = tailQuery(f, position, limit);
    const res = await db.query<EventRow & { seq: number | null; head: number }>(q.text, q.values);
    const head = Number(res.rows[0]?.head ?? 0);
    return { head, rows: res.rows.filter((r) => r.seq !== null).map((r) => ({ ...r, seq: Number(r.seq) })) };
  },

  /**
   * Storage position of an event; when it no longer exists, that of the newest event before it
   * (a tail resuming there may repeat events but never skips one).
   */
  async seqOf(db: Queryable, id: string): Promise<number> {
    const exact = await db.query<{ seq: number }>("SELECT seq FROM events WHERE id = $1", [id]);
    if (exact.rows[0]) return Number(exact.rows[0].seq);
    const before = await db.query<{ seq: number }>("SELECT seq FROM events WHERE id < $1 ORDER BY id DESC LIMIT 1", [
      id,
    ]);
    return Number(before.rows[0]?.seq ?? 0);
  },

  /**
   * Deletes events with a timestamp before `cutoff`, in chunks (each statement stays well under
   * the statement timeout), except `audit.pruned`: the record of deletions is never deleted.
   */
  async deleteBefore(tx: Queryable, cutoff: number, chunk = 20_000): Promise<number> {
    const maxId = ulidFloor(cutoff + ID_TIME_SKEW_MS);
    let total = 0;
    for (;;) {
      const r = await tx.query(
        `DELETE FROM events WHERE id IN (
           SELECT id FROM events WHERE id < $1 AND ts < $2 AND event_type <> 'audit.pruned' LIMIT $3)`,
        [maxId, cutoff, chunk],
      );
      total += r.rowCount ?? 0;
      if ((r.rowCount ?? 0) < chunk) return total;
    }
  },
};
