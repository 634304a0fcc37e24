import type { JsonObject } from "@bufbuild/protobuf";
import { isUniqueViolation } from "@orch/kit";
import type { Queryable } from "@orch/kit";
import { ID_TIME_SKEW_MS, ulidFloor } from "../ulid-time.js";
import { integerArray, textArray } from "./array-literal.js";
import type { Filter } from "../validate.js";
import { byCategoryTypes, categoryTypesQuery, EVENT_COLUMNS, listQuery, tailQuery } from "./query.js";

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

/**
 * The ingest lock is taken in the statement itself: an uncorrelated sub-select in WHERE runs once
 * (a one-time filter) before any row is read, so before any seq is drawn. Outside a transaction the
 * statement is its own transaction and the lock is held until it commits: a batch is one round
 * trip instead of four (BEGIN, lock, insert, COMMIT).
 */
const INSERT_SQL = (idempotent: boolean) => `INSERT INTO events (${EVENT_COLUMNS})
  SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::jsonb[])
  WHERE (SELECT true FROM pg_advisory_xact_lock(hashtext($13)))${idempotent ? "\n  ON CONFLICT (id) DO NOTHING" : ""}
  RETURNING id, seq`;
const INSERT_IDEMPOTENT = INSERT_SQL(true);
const INSERT_NEW = INSERT_SQL(false);

/** The error of an insert that met an id already stored (or twice in its batch). */
export function isKnownId(err: unknown): boolean {
  return isUniqueViolation(err, "events_pkey");
}

function insertParams(rows: EventRow[]): unknown[] {
  const text = (k: Exclude<keyof EventRow, "ts" | "metadata">) => textArray(rows.map((r) => r[k]));
  return [
    text("id"),
    integerArray(rows.map((r) => r.ts)),
    text("event_type"),
    text("severity"),
    text("summary"),
    text("actor_id"),
    text("actor_name"),
    text("actor_type"),
    text("target_id"),
    text("target_name"),
    text("target_type"),
    textArray(rows.map((r) => JSON.stringify(r.metadata))),
    INGEST_LOCK,
  ];
}

const stored = (res: { rows: Array<{ id: string; seq: number }> }) =>
  res.rows.map((r) => ({ id: r.id, seq: Number(r.seq) }));

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
   * seq. Atomic on its own (one statement, which holds the ingest lock until it commits); inside a
   * transaction the lock is held until that commits.
   */
  async insert(db: Queryable, rows: EventRow[]): Promise<Array<{ id: string; seq: number }>> {
    if (rows.length === 0) return [];
    return stored(await db.query<{ id: string; seq: number }>(INSERT_IDEMPOTENT, insertParams(rows)));
  },

  /**
   * Inserts rows none of which is stored yet (ids unique within the batch too), as one statement
   * outside any transaction; throws an error isKnownId recognises, having stored nothing, when one
   * is. The ingest's usual case: redeliveries are rare, and skipping ON CONFLICT's speculative
   * insertion (a unique-index probe and a confirmation per row) cuts the per-row cost of the one
   * backend that holds the ingest lock by about a seventh.
   */
  async insertNew(db: Queryable, rows: EventRow[]): Promise<Array<{ id: string; seq: number }>> {
    if (rows.length === 0) return [];
    return stored(await db.query<{ id: string; seq: number }>(INSERT_NEW, insertParams(rows)));
  },

  /** One page newest first; fetches limit + 1 rows so the caller knows whether more exist. */
  async page(db: Queryable, f: Filter, cursor: string | undefined, limit: number): Promise<EventRow[]> {
    let types: string[] | undefined;
    if (byCategoryTypes(f)) {
      const t = categoryTypesQuery(f.category);
      types = (await db.query<{ event_type: string }>(t.text, t.values)).rows.map((r) => r.event_type);
      if (types.length === 0) return [];
    }
    const q = listQuery(f, cursor, limit + 1, types);
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
