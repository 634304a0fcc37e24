import { create, type JsonObject, type JsonValue } from "@bufbuild/protobuf";
import { AuditEventSchema, type AuditEvent, type StoredEvent, StoredEventSchema } from "@orch/contracts";
import type { Queryable } from "@orch/kit";
import { EVENT_COLUMNS, ID_TIME_SKEW_MS, listQuery, tailQuery, type Filter } from "./filter.js";
import { ulidFloor, ulidTime } from "./ulid-time.js";

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

// Postgres text and jsonb cannot hold NUL; an event carrying one must still be stored.
const clean = (s: string) => (s.includes("\u0000") ? s.replaceAll("\u0000", "\uFFFD") : s);

function cleanJson(v: JsonValue): JsonValue {
  if (typeof v === "string") return clean(v);
  if (Array.isArray(v)) return v.map(cleanJson);
  if (v && typeof v === "object")
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [clean(k), cleanJson(x as JsonValue)]));
  return v;
}

/** Maps a bus event to its row; `skewed` flags an id time far from the timestamp. */
export function toRow(ev: AuditEvent): { row: EventRow; skewed: boolean } {
  const parsed = Date.parse(ev.timestamp);
  const idTime = ulidTime(ev.id);
  const ts = Number.isFinite(parsed) ? parsed : idTime;
  return {
    row: {
      id: ev.id,
      ts,
      event_type: clean(ev.eventType),
      severity: clean(ev.severity),
      summary: clean(ev.summary),
      actor_id: clean(ev.actor?.id ?? ""),
      actor_name: clean(ev.actor?.name ?? ""),
      actor_type: clean(ev.actor?.type ?? ""),
      target_id: clean(ev.target?.id ?? ""),
      target_name: clean(ev.target?.name ?? ""),
      target_type: clean(ev.target?.type ?? ""),
      metadata: cleanJson(ev.metadata ?? {}) as JsonObject,
    },
    skewed: Math.abs(idTime - ts) > ID_TIME_SKEW_MS,
  };
}

export function toEvent(r: EventRow): AuditEvent {
  return create(AuditEventSchema, {
    id: r.id,
    timestamp: new Date(Number(r.ts)).toISOString(),
    eventType: r.event_type,
    severity: r.severity,
    summary: r.summary,
    actor: { id: r.actor_id, name: r.actor_name, type: r.actor_type },
    target: { id: r.target_id, name: r.target_name, type: r.target_type },
    metadata: r.metadata ?? {},
  });
}

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

export const storedEvent = (r: EventRow & { seq: number }): StoredEvent =>
  create(StoredEventSchema, { event: toEvent(r), seq: r.seq });

export interface RetentionOverride {
  retention_days: number;
  updated_at: number;
  updated_by: string;
}

export const retentionDb = {
  async get(db: Queryable): Promise<RetentionOverride | undefined> {
    return (await db.query<RetentionOverride>("SELECT retention_days, updated_at, updated_by FROM retention")).rows[0];
  },
  /** Serialises concurrent changes of the setting (the row may not exist yet). */
  async lock(db: Queryable): Promise<void> {
    await db.query("LOCK TABLE retention IN SHARE ROW EXCLUSIVE MODE");
  },
  async set(db: Queryable, days: number, at: number, by: string): Promise<void> {
    await db.query(
      `INSERT INTO retention (singleton, retention_days, updated_at, updated_by) VALUES (true, $1, $2, $3)
       ON CONFLICT (singleton) DO UPDATE SET retention_days = EXCLUDED.retention_days, updated_at = EXCLUDED.updated_at, updated_by = EXCLUDED.updated_by`,
      [days, at, by],
    );
  },
  async clear(db: Queryable): Promise<void> {
    await db.query("DELETE FROM retention");
  },
};
